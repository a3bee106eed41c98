"""Where this checkout keeps things, for code that must not import torch (the grader)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ADAPTERS = REPO_ROOT / "tests" / "adapters.py"
