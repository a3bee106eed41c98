"""``python -m cs336_basics.training``: the same as ``cs336-train``."""

import sys

from cs336_basics.training.cli import main

sys.exit(main())
