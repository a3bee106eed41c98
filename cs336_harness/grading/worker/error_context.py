"""The note the worker appends to an error a submission raised where the grading environment
explains it: a read-only file system, another Python or torch, case-sensitive file names
(docs/architecture.md, "The worker")."""

from __future__ import annotations

import errno
import re
import sys
from pathlib import Path

# Where the submission's code may write; said after a permission error the sandbox caused.
WRITABLE = (
    "in the grader's sandbox only the working directory (a copy of the submission), /tmp and "
    "/dev/shm are writable"
)


# Said after a socket the user tier's filter refused (`socket_filter`): a permission error
# with no file, which the network namespace of bubblewrap's tier gives no worker either.
NO_NETWORK = "the grader's sandbox has no network: only Unix sockets may be opened"


# A call the harness makes as upstream's tests do, by keyword, to an adapter whose
# parameters were renamed (upstream's own tests would fail the same way).
UNEXPECTED_KEYWORD = re.compile(
    r"^((?:run|get)_\w+)\(\) got an unexpected keyword argument '(\w+)'"
)


def _case_twin(error: ModuleNotFoundError) -> str | None:
    """The file or folder beside a module not found whose name differs only in case."""
    parent, _, child = (error.name or "").rpartition(".")
    package = sys.modules.get(parent) if parent else None
    for folder in getattr(package, "__path__", None) or []:
        try:
            entries = list(Path(folder).iterdir())
        except OSError:
            continue
        for entry in entries:
            stem = entry.stem if entry.suffix == ".py" else entry.name
            if stem != child and stem.lower() == child.lower():
                return entry.name
    return None


def note(error: BaseException) -> str:
    """ " (...)" to append to `error`'s message, or ""."""
    if isinstance(error, OSError) and error.errno == errno.EACCES and error.filename is None:
        return f" ({NO_NETWORK})"
    if isinstance(error, OSError) and error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f" ({WRITABLE})"
    if isinstance(error, SyntaxError):
        return f" (the grader runs Python {sys.version_info.major}.{sys.version_info.minor})"
    if isinstance(error, ModuleNotFoundError):
        twin = _case_twin(error)
        if twin is not None:
            return f" (the folder holds {twin}: names of files are case-sensitive here)"
    renamed = UNEXPECTED_KEYWORD.match(str(error)) if isinstance(error, TypeError) else None
    if renamed is not None:
        adapter, keyword = renamed.groups()
        return (
            f" (upstream's tests call {adapter} with {keyword}=...: an adapter keeps the "
            f"parameter names of upstream's tests/adapters.py)"
        )
    if isinstance(error, ImportError) and (error.name or "").partition(".")[0] == "torch":
        torch = sys.modules.get("torch")
        version = getattr(torch, "__version__", "?")
        return (
            f" (graded on torch {version}; a course of another torch: cs336-grade --course, "
            "or the rubric's [environment])"
        )
    return ""
