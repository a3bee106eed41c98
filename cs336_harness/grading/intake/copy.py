"""A submission taken in: a bounded copy of the code its adapters can import, following no
link, refused whole (`IntakeRefused`) past a limit of `IntakeLimits`
(docs/architecture.md, "Taking a submission in")."""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.adapters.submission_imports import HARNESS_NAMES
from cs336_harness.grading.inputs.bundle import DEBRIS
from cs336_harness.grading.sandbox.limits import format_size

PACKAGE = "cs336_basics"
TESTS = "tests"
ADAPTERS = "adapters.py"
# Opening never follows a link (ELOOP instead) and never blocks on a FIFO swapped in.
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIRECTORY = _READ | os.O_DIRECTORY
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
LINK = "symbolic link, not followed"
# Longest path quoted in a refusal: the reason is one line of a report.
_SHOWN = 120


@dataclass(frozen=True)
class IntakeLimits:
    """How much of a submission the grader takes in; past any of these it is refused.

    A CS336 package is about 20 Python files, ~100 KB, two levels deep: every default is
    two orders of magnitude past that, so only a broken or hostile submission meets one.
    """

    # Components of a copied path (`cs336_basics/model.py` is 2). The walk holds two open
    # descriptors per level, so this also bounds its descriptors.
    depth: int = 32
    # Bytes of a copied path relative to the submission: the copy's paths, under the
    # grader's work directory or the sandbox's /submission, stay far below PATH_MAX (4096).
    path_bytes: int = 1024
    # Entries the walk looks at (files, folders, links, debris, the left out): it lists
    # nothing past this, so it bounds the walk's time and the inodes the copy uses.
    files: int = 10_000
    # Bytes read and written for the files copied: a sparse file's holes become real
    # blocks in the copy, so its size counts, not its blocks.
    apparent_bytes: int = 64 << 20
    # Disk blocks (st_blocks × 512) of the files copied: with the apparent bytes, this
    # bounds what the copy can occupy on the grading host (a copy takes no fewer).
    allocated_bytes: int = 64 << 20
    # One file past this is left out with a note rather than refusing the submission: it
    # is a checkpoint or data file committed by mistake (the trusted tests give every
    # input), and the code beside it still deserves its grade. A GPT-2 vocabulary (1 MB)
    # fits; the smallest TinyStories checkpoint (~70 MB) does not.
    file_bytes: int = 16 << 20
    # An archive handed in (`archives.py`): its own size, and the bytes it unpacks to,
    # counted as they come out of the decompressor, whether written or passed over. A
    # make_submission.sh zip is ~100 KB; a whole checkout with upstream's fixtures, ~10 MB.
    archive_bytes: int = 256 << 20


DEFAULT_LIMITS = IntakeLimits()


class IntakeRefused(Exception):
    """The submission is past a limit of `IntakeLimits`; the message says which, in one line."""


@dataclass(frozen=True)
class LeftOut:
    """A path not copied (relative to the submission, printable) and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path} ({self.reason})"


def _printable(relative: str) -> str:
    """A path as text any report can hold: bytes that are not UTF-8 (which `os` decodes to
    lone surrogates, unencodable) are written as `\\xNN`."""
    return relative.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def shown(relative: str) -> str:
    """A path as one line of a refusal: printable, cut short."""
    text = _printable(relative)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def not_regular(mode: int) -> str:
    """Why an entry of file type `mode` (a link, a FIFO, a device) is left out."""
    if stat.S_ISLNK(mode):
        return LINK
    kinds = {
        stat.S_ISFIFO: "FIFO",
        stat.S_ISCHR: "character device",
        stat.S_ISBLK: "block device",
        stat.S_ISSOCK: "socket",
    }
    kind = next((name for test, name in kinds.items() if test(mode)), "special file")
    return f"{kind}, not a regular file"


def _unreadable(error: OSError) -> str:
    # O_NOFOLLOW's answer to a link: the submission's own folder, or an entry swapped for a
    # link after the walk listed it.
    if error.errno == errno.ELOOP:
        return LINK
    return f"cannot be read: {error.strerror or error}"


def _open_folder(name: str | Path, dir_fd: int | None = None) -> int:
    """Open a folder, never through a link. O_NOFOLLOW with O_DIRECTORY fails on a link as
    ENOTDIR, like on a file: that case is told apart, and raised as a link's ELOOP."""
    try:
        return os.open(name, _DIRECTORY, dir_fd=dir_fd)
    except NotADirectoryError as error:
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from error
        raise


def _reopened(opened: int, listed: os.stat_result) -> os.stat_result | None:
    """The opened entry's status, if it is still the one listed (same type, device, inode)."""
    now = os.fstat(opened)
    same_type = stat.S_IFMT(now.st_mode) == stat.S_IFMT(listed.st_mode)
    return now if same_type and (now.st_dev, now.st_ino) == (listed.st_dev, listed.st_ino) else None


class Tally:
    """What a take-in (a copy, or an archive unpacked: `action`) counted against its limits,
    and what it left out; a refusal past a limit says the same for both."""

    def __init__(self, limits: IntakeLimits, action: str = "copy"):
        self.limits = limits
        self.action = action
        self.entries = 0
        self.apparent = 0
        self.allocated = 0
        self.left_out: list[LeftOut] = []

    def leave_out(self, relative: str, reason: str) -> None:
        self.left_out.append(LeftOut(_printable(relative), reason))

    def admit(self, relative: str) -> None:
        """Count one entry; refuse the submission when it is one too many, too deep or too long."""
        limits = self.limits
        self.entries += 1
        if self.entries > limits.files:
            raise IntakeRefused(f"more than {limits.files} files and folders")
        if relative.count("/") + 1 > limits.depth:
            raise IntakeRefused(f"folders nested more than {limits.depth} deep: {shown(relative)}")
        length = len(os.fsencode(relative))
        if length > limits.path_bytes:
            raise IntakeRefused(
                f"a path of {length} bytes, over the limit of {limits.path_bytes}: "
                f"{shown(relative)}"
            )

    def count_bytes(self, apparent: int, allocated: int) -> None:
        """Count a file before it is written; refuse if it takes the total past a limit."""
        self.apparent += apparent
        self.allocated += allocated
        if self.apparent > self.limits.apparent_bytes:
            raise IntakeRefused(
                f"more than {format_size(self.limits.apparent_bytes)} of files to {self.action}"
            )
        if self.allocated > self.limits.allocated_bytes:
            raise IntakeRefused(
                f"files taking more than {format_size(self.limits.allocated_bytes)} of disk"
            )


class _Copy(Tally):
    """One submission's copy in progress, by a walk of its folder."""

    def part(self, source: int, name: str, relative: str, folder: bool) -> os.stat_result | None:
        """The status of one part of the submission, looked up by name, when it is what
        the grader expects there (a folder, or a regular file); None, with a note when
        it is something else, or when it is absent."""
        try:
            listed = os.stat(name, dir_fd=source, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as error:
            self.leave_out(relative, _unreadable(error))
            return None
        self.admit(relative)
        mode = listed.st_mode
        if (stat.S_ISDIR(mode) and folder) or (stat.S_ISREG(mode) and not folder):
            return listed
        if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
            self.leave_out(relative, "a file, not a folder" if folder else "a folder, not a file")
        else:
            self.leave_out(relative, not_regular(mode))
        return None

    def copy_file(
        self, source: int, dest: int, name: str, relative: str, listed: os.stat_result
    ) -> None:
        try:
            opened = os.open(name, _READ, dir_fd=source)
        except OSError as error:
            self.leave_out(relative, _unreadable(error))
            return
        try:
            # The sizes of the file opened, not the one listed: what is read is bounded by them.
            now = _reopened(opened, listed)
            if now is None:
                self.leave_out(relative, "changed while it was copied")
                return
            size = now.st_size
            if size > self.limits.file_bytes:
                limit = format_size(self.limits.file_bytes)
                self.leave_out(relative, f"{size} bytes, over the limit of {limit} for one file")
                return
            self.count_bytes(size, now.st_blocks * 512)
            with os.fdopen(os.open(name, _CREATE, 0o666, dir_fd=dest), "wb") as written:
                left = size  # a file growing while it is copied is cut at the size counted
                while left > 0 and (chunk := os.read(opened, min(_CHUNK, left))):
                    written.write(chunk)
                    left -= len(chunk)
        finally:
            os.close(opened)

    def open_folder(
        self, source: int, name: str, relative: str, listed: os.stat_result
    ) -> int | None:
        """A descriptor of a folder the walk found, or None when it is left out."""
        try:
            opened = _open_folder(name, source)
        except OSError as error:
            self.leave_out(relative, _unreadable(error))
            return None
        if _reopened(opened, listed) is None:
            os.close(opened)
            self.leave_out(relative, "changed while it was copied")
            return None
        return opened

    def enter(
        self, source: int, dest: int, name: str, relative: str, listed: os.stat_result
    ) -> tuple[int, int, Iterator[tuple[str, os.stat_result]]] | None:
        """Open a folder the walk found, list it, then make its copy: both descriptors and
        its entries, or None when it is left out. Listed first, so that a folder past a
        limit is refused before its copy exists."""
        opened = self.open_folder(source, name, relative, listed)
        if opened is None:
            return None
        try:
            entries = self.listing(opened, relative)
            os.mkdir(name, dir_fd=dest)
            return opened, os.open(name, _DIRECTORY, dir_fd=dest), iter(entries)
        except BaseException:
            os.close(opened)
            raise

    def listing(self, directory: int, relative: str) -> list[tuple[str, os.stat_result]]:
        """A folder's entries, by name, debris dropped; each counted as it is read, so a
        folder of a million entries costs no more than the limit."""
        found = []
        with os.scandir(directory) as entries:
            for entry in entries:
                child = f"{relative}/{entry.name}"
                self.admit(child)
                if any(fnmatch.fnmatchcase(entry.name, pattern) for pattern in DEBRIS):
                    continue
                try:
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
                except OSError as error:
                    self.leave_out(child, _unreadable(error))
        return sorted(found, key=lambda item: item[0])

    def copy_tree(
        self,
        source: int,
        dest: int,
        name: str,
        relative: str,
        listed: os.stat_result,
        python_only: bool = False,
    ) -> None:
        """Depth first, with an explicit stack of open folders: no recursion, so no depth
        limit but `IntakeLimits.depth`, which also caps the descriptors held. `python_only`:
        of the regular files, only `*.py` are copied (the others silently stay behind)."""
        opened = self.enter(source, dest, name, relative, listed)
        stack = [(*opened, relative)] if opened is not None else []
        try:
            while stack:
                folder, copied, entries, path = stack[-1]
                entry = next(entries, None)
                if entry is None:
                    stack.pop()
                    os.close(folder)
                    os.close(copied)
                    continue
                child, status = entry
                child_path = f"{path}/{child}"
                if stat.S_ISREG(status.st_mode):
                    if not python_only or child.endswith(".py"):
                        self.copy_file(folder, copied, child, child_path, status)
                elif not stat.S_ISDIR(status.st_mode):
                    self.leave_out(child_path, not_regular(status.st_mode))
                elif (inner := self.enter(folder, copied, child, child_path, status)) is not None:
                    stack.append((*inner, child_path))
        finally:
            for folder, copied, _, _ in stack:
                os.close(folder)
                os.close(copied)


def _is_test_module(name: str) -> bool:
    """pytest's default test files and conftest: the student's own tests, never imported by
    adapters, whose runs are the grader's trusted tests."""
    stem = name.removesuffix(".py")
    return stem == "conftest" or stem.startswith("test_") or stem.endswith("_test")


def _copy_tests(copy: _Copy, root: int, dest: int, tests: os.stat_result) -> None:
    """The Python files directly in `tests/` but test modules and conftest, `adapters.py`
    first: its note (a link) heads the list, which a report may cut short. Nothing deeper is
    listed, so the submission's own fixtures count against no limit."""
    opened = copy.open_folder(root, TESTS, TESTS, tests)
    if opened is None:
        return
    out = None
    try:
        found = sorted(_python_files(opened), key=lambda entry: entry[0] != ADAPTERS)
        for name, status in found:
            relative = f"{TESTS}/{name}"
            copy.admit(relative)
            if not stat.S_ISREG(status.st_mode):
                copy.leave_out(relative, not_regular(status.st_mode))
                continue
            if out is None:
                os.mkdir(TESTS, dir_fd=dest)
                out = os.open(TESTS, _DIRECTORY, dir_fd=dest)
            copy.copy_file(opened, out, name, relative, status)
    finally:
        os.close(opened)
        if out is not None:
            os.close(out)


def _python_files(folder: int) -> list[tuple[str, os.stat_result]]:
    """The entries of `folder` named `*.py` (but test modules), unfollowed, by name."""
    found = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".py") and not _is_test_module(entry.name):
                with contextlib.suppress(OSError):
                    found.append((entry.name, entry.stat(follow_symlinks=False)))
    return sorted(found)


def _copy_top_level(copy: _Copy, root: int, dest: int) -> None:
    """The submission's other top-level modules and packages (their Python files), which
    its adapters may import beside `cs336_basics`; not the harness's own packages (a
    checkout of the handout holds `cs336_harness/`, this repository `cs336_staff/` too),
    which the worker imports from the grader's copy whatever a submission holds, and whose
    code is not the submission's to be read for the rules. Only what is copied counts
    against the limits; past `limits.files` entries the top level is looked at no further,
    with a note."""
    with os.scandir(root) as scan:
        entries = []
        for seen, entry in enumerate(scan):
            if seen == copy.limits.files:
                copy.leave_out(".", f"more than {copy.limits.files} entries at the top level; "
                               "the rest was not looked at")  # fmt: skip
                break
            if entry.name not in (PACKAGE, TESTS, *HARNESS_NAMES) and (
                entry.name.endswith(".py") or entry.name.isidentifier()
            ):
                with contextlib.suppress(OSError):
                    entries.append((entry.name, entry.stat(follow_symlinks=False)))
    for name, status in sorted(entries):
        if name.endswith(".py") and stat.S_ISREG(status.st_mode):
            copy.admit(name)
            copy.copy_file(root, dest, name, name, status)
        elif stat.S_ISDIR(status.st_mode) and _is_package(root, name):
            copy.copy_tree(root, dest, name, name, status, python_only=True)


def _is_package(root: int, name: str) -> bool:
    """Whether the folder `name` holds a regular `__init__.py` (looked up unfollowed)."""
    try:
        folder = _open_folder(name, root)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.stat("__init__.py", dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False
    finally:
        os.close(folder)


def copy_submission(
    source: Path, dest: Path, limits: IntakeLimits = DEFAULT_LIMITS
) -> list[LeftOut]:
    """Copy what a submission contributes, its code (module docstring), into `dest` (made
    here); return what was left out of the copy. Raises IntakeRefused past a limit.

    Anything else it holds (its own tests, fixtures, conftest, data) is never read. A part
    it lacks stays absent, so importing it fails in the worker as it would for a student.
    `source` itself is not followed either: a link in a class directory, which `discover`
    keeps unresolved, is refused here rather than graded as what it points to.
    """
    try:
        root = _open_folder(source)
    except OSError as error:
        raise IntakeRefused(f"{shown(source.name)}: {_unreadable(error)}") from None
    copy = _Copy(limits)
    try:
        dest.mkdir(parents=True)
        out = os.open(dest, _DIRECTORY)
        try:
            # The adapters first: a note on them (a linked `tests`) heads the list, which a
            # report may cut short.
            tests = copy.part(root, TESTS, TESTS, folder=True)
            if tests is not None:
                _copy_tests(copy, root, out, tests)
            package = copy.part(root, PACKAGE, PACKAGE, folder=True)
            if package is not None:
                copy.copy_tree(root, out, PACKAGE, PACKAGE, package)
            _copy_top_level(copy, root, out)
        finally:
            os.close(out)
    finally:
        os.close(root)
    return copy.left_out
