"""The one way shipped code reaches the withheld folders: by name, and only where they exist.

A staff checkout has `cs336_staff/`: diagnoses come from the live catalog of known mistakes
and the grader draws fresh inputs with the generator. A student handout and the grader's
bundle have neither, and read the table of the mistakes' outputs written beforehand. Every
other shipped module is held to no import of a withheld one (`tests/harness/test_layout.py`),
so a handout cannot depend on what it lacks by accident.
"""

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
