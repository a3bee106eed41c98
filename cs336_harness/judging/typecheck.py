"""`--typecheck`: jaxtyping's import hook, with beartype, checks every call into
`cs336_basics` against its annotations (docs/checking.md, "Runtime shape checking")."""

from __future__ import annotations

import sys

import jaxtyping
import pytest
from beartype import BeartypeConf, beartype

CHECKED_PACKAGE = "cs336_basics"

# The typing spec accepts an int where a float is annotated (PEP 484's numeric tower) and
# so do static checkers; beartype refuses it unless told, which would fail correct calls
# such as `lr=1`.
check = beartype(conf=BeartypeConf(is_pep484_tower=True))


class ShapeChecks:
    """The installed hook; one per process, since an import is checked or not for good."""

    _installed: ShapeChecks | None = None

    def __init__(self) -> None:
        if CHECKED_PACKAGE in sys.modules:
            raise pytest.UsageError(
                f"cs336: --typecheck: {CHECKED_PACKAGE} was imported, unchecked, before the "
                f"hook could be installed (from {sys.modules[CHECKED_PACKAGE].__file__}, by "
                "a plugin or conftest.py that pytest loaded before the harness)"
            )
        self._hook = jaxtyping.install_import_hook(CHECKED_PACKAGE, f"{__name__}.check")

    @classmethod
    def install(cls) -> ShapeChecks | None:
        """Install the hook; None when an enclosing session (pytester) already has."""
        if cls._installed is not None:
            return None
        cls._installed = cls()
        return cls._installed

    def uninstall(self) -> None:
        self._hook.uninstall()
        ShapeChecks._installed = None
