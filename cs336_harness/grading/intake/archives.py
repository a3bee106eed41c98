"""Unpacking a submission handed in as an archive (zip, or tar: plain, gzip, bzip2, xz) in
the grader's own process: regular files and folders only, nothing outside the folder, within
the intake's limits (`IntakeLimits`) and two of its own, refused past them in one line that
names the archive (docs/grading.md, "Archives, as students hand them in").
"""

from __future__ import annotations

import bz2
import errno
import gzip
import lzma
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import IO

from cs336_harness.grading.intake.copy import (
    DEFAULT_LIMITS,
    LINK,
    IntakeLimits,
    IntakeRefused,
    LeftOut,
    Tally,
    not_regular,
    shown,
)
from cs336_harness.grading.sandbox.limits import format_size

# What an archive handed in may be called (any case); `.zip` is read as a zip, the others
# as a tar, compressed as its first bytes say.
SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
# The longest name of one file or folder that Linux's file systems take (NAME_MAX).
NAME_BYTES = 255
# A tar's pax or GNU long-name header is read whole by tarfile, whatever size it declares:
# past this it is refused before it is read (a real one holds a path and a few attributes).
HEADER_BYTES = 1 << 20
_CHUNK = 1 << 20
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What the libraries raise on an archive they cannot read (gzip's and bz2's are OSErrors,
# turned into a refusal where the decompressed bytes are read). Fuzzing found the last
# two: zipfile's "zip file version 17.3" for a version it does not know, and a name flagged
# UTF-8 that is not (UnicodeDecodeError).
_UNREADABLE = (
    zipfile.BadZipFile,
    tarfile.TarError,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    NotImplementedError,
    ValueError,
)
_TAR_METADATA = (
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
)
_TAR_SPECIAL = {
    tarfile.CHRTYPE: stat.S_IFCHR,
    tarfile.BLKTYPE: stat.S_IFBLK,
    tarfile.FIFOTYPE: stat.S_IFIFO,
}
_HARD_LINK = "hard link, not followed"
# Names a file system takes but no code has: a line break, an escape (macOS's `Icon\r`).
_CONTROL = re.compile("[\x00-\x1f\x7f]")
# A Windows drive (`C:/`): an absolute path there.
_DRIVE = re.compile("[A-Za-z]:(/|$)")
# The zip format's records this module reads itself (`_zip_members`), little-endian: the
# end of the central directory, ZIP64's locator and end record, and a directory entry.
_END = struct.Struct("<4s4H2LH")
_LOCATOR = struct.Struct("<4sLQL")
_END64 = struct.Struct("<4sQ2H2L4Q")
_ENTRY = struct.Struct("<4s6H3L5H2L")


def archive_stem(name: str) -> str | None:
    """`name` without its archive suffix (`alice.tar.gz` → `alice`); None if it has none."""
    lower = name.lower()
    suffix = next((s for s in SUFFIXES if lower.endswith(s) and len(name) > len(s)), None)
    return None if suffix is None else name[: -len(suffix)]


class _Counted:
    """The bytes a decompressor gives, counted against the archive's limit as they come:
    a header's sizes are never what is counted. The library's errors become a refusal."""

    def __init__(self, stream: IO[bytes], unpacking: _Unpacking):
        self.stream = stream
        self.unpacking = unpacking

    def read(self, size: int = -1) -> bytes:
        try:
            data = self.stream.read(_CHUNK if size is None or size < 0 else size)
        except (OSError, *_UNREADABLE) as error:
            raise IntakeRefused(f"not a readable archive: {error}") from None
        self.unpacking.produced(len(data))
        return data

    def __enter__(self) -> _Counted:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stream.close()


class _Header(tarfile.TarInfo):
    """A tar member's header; one that declares metadata past HEADER_BYTES is refused
    before tarfile reads it (it would read all of it at once)."""

    @classmethod
    def frombuf(cls, buf: bytes, encoding: str, errors: str) -> tarfile.TarInfo:
        header = super().frombuf(buf, encoding, errors)
        if header.type in _TAR_METADATA and header.size > HEADER_BYTES:
            raise IntakeRefused(
                f"a tar header of {header.size} bytes, over the limit of "
                f"{format_size(HEADER_BYTES)}"
            )
        return header


class _Unpacking:
    """One archive being unpacked into `dest`: what it has made, counted and left out."""

    def __init__(self, dest: Path, limits: IntakeLimits):
        self.dest = dest
        self.limits = limits
        self.tally = Tally(limits, action="unpack")
        self.unpacked = 0
        self.folders: set[str] = set()

    def produced(self, count: int) -> None:
        self.unpacked += count
        if self.unpacked > self.limits.archive_bytes:
            raise IntakeRefused(f"unpacks to more than {format_size(self.limits.archive_bytes)}")

    def relative(self, name: str) -> str | None:
        """The member's path in the folder, checked and counted; None for the folder
        itself (`./`) and for a name with a control character (left out, with a note)."""
        if name.startswith("/") or _DRIVE.match(name):
            raise IntakeRefused(f"a member with an absolute path: {shown(name)}")
        parts = [part for part in name.split("/") if part not in ("", ".")]
        if ".." in parts:
            raise IntakeRefused(f"a member outside the archive's folder: {shown(name)}")
        if not parts:
            return None
        relative = "/".join(parts)
        self.tally.admit(relative)
        longest = max(len(os.fsencode(part)) for part in parts)
        if longest > NAME_BYTES:
            raise IntakeRefused(
                f"a name of {longest} bytes, over the limit of {NAME_BYTES}: {shown(relative)}"
            )
        if _CONTROL.search(relative):
            self.tally.leave_out(relative, "a control character in its name, not unpacked")
            return None
        return relative

    def folder(self, relative: str, member: bool = False) -> bool:
        """Make the folder `relative` and those above it (0700), each counted once (but
        `relative` when it is a `member`, counted as such); False, with a note, when a file
        is in the way."""
        parts = relative.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            if prefix in self.folders:
                continue
            if not (member and prefix == relative):
                self.tally.admit(prefix)
            try:
                os.mkdir(self.dest / prefix, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(self.dest / prefix).st_mode):
                    self.tally.leave_out(relative, f"cannot be unpacked: {prefix} is a file")
                    return False
            self.folders.add(prefix)
        return True

    def file(self, relative: str, declared: int, open_member: Callable[[], IO[bytes]]) -> None:
        """Write one regular file (0600) from the member `open_member` opens (its bytes
        counted as they come), each chunk counted before it is written; a file past
        `file_bytes`, declared or real, is left out."""
        limit = self.limits.file_bytes
        too_large = f"over the limit of {format_size(limit)} for one file"
        if declared > limit:
            self.tally.leave_out(relative, f"{declared} bytes, {too_large}")
            return
        parent = relative.rpartition("/")[0]
        if parent and not self.folder(parent):
            return
        with open_member() as member:
            try:
                fd = os.open(self.dest / relative, _CREATE, 0o600)
            except FileExistsError:
                self.tally.leave_out(relative, "a second member of this name, not unpacked")
                return
            written = 0
            with open(fd, "wb") as out:
                while chunk := member.read(_CHUNK):
                    written += len(chunk)
                    if written > limit:
                        break
                    self.tally.count_bytes(len(chunk), len(chunk))
                    out.write(chunk)
        if written > limit:
            os.unlink(self.dest / relative)
            self.tally.leave_out(relative, f"more than {limit} bytes, {too_large}")


def _open_archive(archive: Path, limits: IntakeLimits) -> IO[bytes]:
    """The archive itself, opened without following a link, if it is a regular file
    within the size limit."""
    try:
        fd = os.open(archive, _OPEN)
    except OSError as error:
        reason = LINK if error.errno == errno.ELOOP else f"cannot be read: {error.strerror}"
        raise IntakeRefused(reason) from None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        raise IntakeRefused(not_regular(status.st_mode))
    if status.st_size > limits.archive_bytes:
        os.close(fd)
        raise IntakeRefused(
            f"an archive of {status.st_size} bytes, over the limit of "
            f"{format_size(limits.archive_bytes)}"
        )
    os.set_blocking(fd, True)
    return open(fd, "rb")


def _zip_members(raw: IO[bytes], limit: int) -> int:
    """How many members the zip's central directory lists, counted up to `limit` + 1.

    zipfile makes an object of every entry of the central directory when it opens an
    archive, before any count can be checked: a million entries cost it 8 s and 400 MB
    here. So the end record is found as zipfile finds it (the last signature in the final
    64 KiB; ZIP64's record just before its locator), and the entries are walked from the
    same start zipfile will use, by their lengths alone, up to the limit."""
    size = raw.seek(0, os.SEEK_END)
    window = min(size, _END.size + 0xFFFF)
    raw.seek(size - window)
    tail = raw.read(window)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _END.size:
        raise IntakeRefused("not a readable archive: no end of central directory (not a zip)")
    *_, directory_size, _, _ = _END.unpack_from(tail, at)
    end = size - window + at
    if at >= _LOCATOR.size and tail[at - _LOCATOR.size : at - _LOCATOR.size + 4] == b"PK\x06\x07":
        end -= _LOCATOR.size + _END64.size
        raw.seek(end)
        record = raw.read(_END64.size)
        if len(record) < _END64.size or not record.startswith(b"PK\x06\x06"):
            raise IntakeRefused("not a readable archive: a broken ZIP64 end record")
        directory_size = _END64.unpack(record)[8]
    position, stop, count = end - directory_size, end, 0
    while position < stop and count <= limit:
        raw.seek(position)
        entry = raw.read(_ENTRY.size)
        if position < 0 or len(entry) < _ENTRY.size or not entry.startswith(b"PK\x01\x02"):
            raise IntakeRefused("not a readable archive: a broken central directory")
        fields = _ENTRY.unpack(entry)
        position += _ENTRY.size + fields[10] + fields[11] + fields[12]
        count += 1
    return count


def _zip_kind(info: zipfile.ZipInfo) -> str | None:
    """None for a regular file or a folder; else why the member is left out. A zip made
    on Unix keeps the file's type in the high bits of its external attributes (a link's
    target is its data); one made elsewhere has none there, and holds files."""
    mode = info.external_attr >> 16
    if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFDIR):
        return not_regular(mode)
    if info.flag_bits & 0x1 and not info.is_dir():
        return "encrypted, not unpacked"
    return None


def _unpack_zip(raw: IO[bytes], unpacking: _Unpacking) -> None:
    limits = unpacking.limits
    if _zip_members(raw, limits.files) > limits.files:
        raise IntakeRefused(f"more than {limits.files} files and folders")
    raw.seek(0)
    with zipfile.ZipFile(raw) as archive:
        members = archive.infolist()
        declared = sum(info.file_size for info in members if not info.is_dir())
        if declared > limits.archive_bytes:
            raise IntakeRefused(
                f"unpacks to {declared} bytes, over the limit of "
                f"{format_size(limits.archive_bytes)}"
            )
        for info in members:
            # PowerShell 5's Compress-Archive separates folders with backslashes.
            relative = unpacking.relative(info.filename.replace("\\", "/"))
            if relative is None:
                continue
            reason = _zip_kind(info)
            if reason is not None:
                unpacking.tally.leave_out(relative, reason)
            elif info.is_dir() or stat.S_ISDIR(info.external_attr >> 16):
                unpacking.folder(relative, member=True)
            else:
                try:
                    unpacking.file(
                        relative,
                        info.file_size,
                        lambda info=info: _Counted(archive.open(info), unpacking),
                    )
                except NotImplementedError:
                    unpacking.tally.leave_out(
                        relative, f"compressed by method {info.compress_type}, not unpacked"
                    )


def _decompressed(raw: IO[bytes]) -> IO[bytes]:
    """The tar inside `raw`: gzip, bzip2 or xz as its first bytes say, whatever its name."""
    head = raw.read(6)
    raw.seek(0)
    if head.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if head.startswith(b"BZh"):
        return bz2.BZ2File(raw)
    if head.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)
    return raw


def _unpack_tar(raw: IO[bytes], unpacking: _Unpacking) -> None:
    stream = _Counted(_decompressed(raw), unpacking)
    # As a stream: read once, front to back, so that no member is decompressed twice.
    with tarfile.open(fileobj=stream, mode="r|", tarinfo=_Header) as archive:
        for member in archive:
            relative = unpacking.relative(member.name)
            if relative is None:
                continue
            if member.isdir():
                unpacking.folder(relative, member=True)
            elif member.isreg():
                unpacking.file(relative, member.size, lambda m=member: archive.extractfile(m))
            elif member.issym():
                unpacking.tally.leave_out(relative, LINK)
            elif member.islnk():
                unpacking.tally.leave_out(relative, _HARD_LINK)
            else:
                unpacking.tally.leave_out(relative, not_regular(_TAR_SPECIAL.get(member.type, 0)))


def unpack(archive: Path, dest: Path, limits: IntakeLimits = DEFAULT_LIMITS) -> list[LeftOut]:
    """Unpack `archive` into `dest` (made here, 0700); return what was left out, by its
    path in the archive. Raises IntakeRefused, its message naming the archive, past a
    limit, for a member outside `dest`, or for an archive that cannot be read.

    Python's own extraction is not used, and what it would not check is checked here. For
    a tar, the `data` filter (Python 3.11.4 and later only) keeps links that stay inside
    the folder and writes each member's declared size with no running total; zipfile's
    `extractall` drops `..` and leading slashes silently, writes a link as a file holding
    its target, and bounds nothing but what each member declares. So here every name is
    checked (absolute or with `..`, too deep or too long: refused; with a control
    character: left out), only regular files and folders are made (0600 and 0700,
    whatever modes the archive gives), and every byte is counted, out of the decompressor
    (`archive_bytes`, written or passed over) and into a file (`file_bytes`,
    `apparent_bytes`), before it is written. A zip's central directory is counted before
    zipfile reads it (`_zip_members`), and a tar's oversized headers are refused before
    tarfile reads them (`_Header`)."""
    unpacking = _Unpacking(dest, limits)
    try:
        with _open_archive(archive, limits) as raw:
            os.mkdir(dest, 0o700)
            if archive.name.lower().endswith(".zip"):
                _unpack_zip(raw, unpacking)
            else:
                _unpack_tar(raw, unpacking)
    except IntakeRefused as refusal:
        raise IntakeRefused(f"{shown(archive.name)}: {refusal}") from None
    except _UNREADABLE as error:
        raise IntakeRefused(f"{shown(archive.name)}: not a readable archive: {error}") from None
    return unpacking.tally.left_out
