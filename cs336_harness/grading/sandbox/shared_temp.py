"""What a user-tier worker holds in its home and the host's shared temp folders (/tmp,
/var/tmp, /dev/shm, /run/lock): bounded while it runs (`Watch`), removed when it ends
(`remove_owned`), walked through no link (docs/architecture.md, "The sandbox's tiers")."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.sandbox.limits import format_size

SHARED = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# How deep into others' writable folders the walk looks for entries of the user id's own.
DEPTH = 8


@dataclass(frozen=True)
class Footprint:
    """Entries (files, folders, links, ...) and the bytes they hold on disk."""

    entries: int = 0
    bytes: int = 0

    def __add__(self, other: Footprint) -> Footprint:
        return Footprint(self.entries + other.entries, self.bytes + other.bytes)


def _open(name: str | Path, dir_fd: int | None = None) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)


def _writable_by(st: os.stat_result, uid: int) -> bool:
    """Whether a folder of another's lets `uid` make entries in it."""
    return bool(st.st_mode & stat.S_IWOTH or (st.st_gid == uid and st.st_mode & stat.S_IWGRP))


def _owned(uid: int, dir_fd: int, depth: int) -> Iterator[tuple[int, str, os.stat_result]]:
    """(folder, name, stat) of each entry of `uid` below the open folder `dir_fd`."""
    with contextlib.suppress(OSError), os.scandir(dir_fd) as entries:
        for entry in list(entries):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == uid:
                yield dir_fd, entry.name, st
            elif stat.S_ISDIR(st.st_mode) and depth < DEPTH and _writable_by(st, uid):
                try:
                    fd = _open(entry.name, dir_fd)
                except OSError:
                    continue
                try:
                    yield from _owned(uid, fd, depth + 1)
                finally:
                    os.close(fd)


def _size(dir_fd: int, name: str, st: os.stat_result) -> Footprint:
    """An entry and, for a folder, everything below it."""
    held = Footprint(1, st.st_blocks * 512)
    if not stat.S_ISDIR(st.st_mode):
        return held
    try:
        fd = _open(name, dir_fd)
    except OSError:
        return held
    try:
        for *_, root_fd in os.fwalk(dir_fd=fd):
            with contextlib.suppress(OSError), os.scandir(root_fd) as entries:
                for entry in entries:
                    with contextlib.suppress(OSError):
                        held += Footprint(1, entry.stat(follow_symlinks=False).st_blocks * 512)
    finally:
        os.close(fd)
    return held


def _roots(paths: tuple[str | Path, ...]) -> Iterator[int]:
    for path in paths:
        try:
            fd = _open(path)
        except OSError:
            continue
        try:
            yield fd
        finally:
            os.close(fd)


def footprint(uid: int, paths: tuple[str | Path, ...] = SHARED) -> Footprint:
    """What `uid` holds below `paths`."""
    held = Footprint()
    for fd in _roots(paths):
        for dir_fd, name, st in _owned(uid, fd, 0):
            held += _size(dir_fd, name, st)
    return held


def remove_owned(uid: int, paths: tuple[str | Path, ...] = SHARED) -> Footprint:
    """Remove everything of `uid` below `paths` (its processes ended); what was removed."""
    removed = Footprint()
    for fd in _roots(paths):
        for dir_fd, name, st in _owned(uid, fd, 0):
            removed += _size(dir_fd, name, st)
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(name, dir_fd=dir_fd)
                else:
                    os.unlink(name, dir_fd=dir_fd)
    return removed


class Watch:
    """Stops a worker whose user id holds more than the limits in `paths`.

    `exceeded` is asked every tenth of a second while a call runs, so it first compares the
    free space and entries of each file system with what they were when the worker started
    (`statvfs`, a system call each); only when they fell by more than the limits does it
    walk the folders to count what the user id itself holds, since a neighbour may have
    written too. What others wrote is then forgiven: it becomes part of the baseline."""

    def __init__(
        self, uid: int, paths: tuple[str | Path, ...], limit_bytes: int, limit_entries: int
    ):
        self.uid, self.paths = uid, paths
        self.limit = Footprint(limit_entries, limit_bytes)
        self.free: dict[int, tuple[str | Path, Footprint]] = {}
        for path in paths:
            with contextlib.suppress(OSError):
                self.free.setdefault(os.stat(path).st_dev, (path, _free(path)))

    def exceeded(self) -> str:
        """Why the worker must stop, or ""."""
        fell = Footprint()
        for path, before in self.free.values():
            now = _free(path)
            fell += Footprint(before.entries - now.entries, before.bytes - now.bytes)
        if fell.entries <= self.limit.entries and fell.bytes <= self.limit.bytes:
            return ""
        held = footprint(self.uid, self.paths)
        if held.entries > self.limit.entries or held.bytes > self.limit.bytes:
            return (
                f"it held {held.entries} file{'s' * (held.entries != 1)} "
                f"({held.bytes / (1 << 20):.1f} MiB) in its home and the shared temp folders "
                f"({', '.join(SHARED)}), past the limit of {self.limit.entries} files and "
                f"{format_size(self.limit.bytes)}"
            )
        for device, (path, _) in self.free.items():
            self.free[device] = (path, _free(path) + held)
        return ""


def _free(path: str | Path) -> Footprint:
    try:
        vfs = os.statvfs(path)
    except OSError:
        return Footprint()
    return Footprint(vfs.f_favail, vfs.f_bavail * vfs.f_frsize)
