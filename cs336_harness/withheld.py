"""The one way shipped code reaches the withheld folders (`cs336_staff/`: the catalog, the
fixture generator): by name, and only where they exist (neither the handout nor the grader's
bundle has them)."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

CATALOG = "cs336_staff.catalog"
GENERATOR = "cs336_staff.fixturegen"


def available(name: str) -> bool:
    """Whether this copy has the withheld module `name` (false in a handout)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # the parent package is absent, not only the module
        return False


def load(name: str) -> ModuleType:
    return importlib.import_module(name)
