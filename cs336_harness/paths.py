"""Where this checkout keeps things, and the user's cache, for code that must not import torch
(the grader)."""

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_ADAPTERS = REPO_ROOT / "tests" / "adapters.py"


def user_cache() -> Path:
    """The user's cache folder, $XDG_CACHE_HOME else ~/.cache: cs336-grade keeps its own in it."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
