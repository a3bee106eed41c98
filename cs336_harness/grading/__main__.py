"""`python -m cs336_harness.grading`: the same as `cs336-grade`."""

import sys

from cs336_harness.grading.cli import main

sys.exit(main())
