"""Submissions as students hand them in, as archives: upstream's make_submission.sh zip of a
checkout, a zip or tarball of the folder holding one, and hostile archives.

The hostile ones are built byte by byte where a library would refuse to write them or
would take seconds: a GiB of zeros is one deflated MiB repeated (deflate blocks after a
full flush stand alone), a million zip entries are one central directory entry repeated,
a million tar members one header repeated under gzip.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import os
import shutil
import stat
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

from tests.grading import synthetic
from tests.grading.real_world import OWN_COMMON

# What upstream's make_submission.sh passes `zip -r` with `-x`, but `*build*`, which would
# also drop the bundled package's `cs336_basics/builders.py` (any path holding "build"):
# a student's package with such a file hands in a zip without it.
MAKE_SUBMISSION_EXCLUDES = (
    "*egg-info*", "*mypy_cache*", "*pytest_cache*", "*ipynb_checkpoints*", "*__pycache__*",
    "*.pkl", "*.pickle", "*.txt", "*.log", "*.json", "*.out", "*.err", ".git*", ".venv/*",
    ".*", "tests/fixtures", "tests/_snapshots", "*.pt", "*.pth", "*.npy", "*.npz", "*.bin",
    "*.png", "out/*", "images/*",
)  # fmt: skip
# A checkout's files beside its code, as upstream's handout and a student's work leave them.
CHECKOUT_FILES = {
    "README.md": "# CS336 Spring 2025 Assignment 1: Basics\n",
    "pyproject.toml": '[project]\nname = "cs336_basics"\nrequires-python = ">=3.11"\n',
    "uv.lock": "version = 1\n",
    "tests/__init__.py": "",
    "tests/common.py": OWN_COMMON,
    "tests/conftest.py": "import pytest\n",
    "tests/test_model.py": "def test_linear():\n    pass\n",
    "tests/fixtures/corpus.en": "text\n",
    "tests/fixtures/gpt2_vocab.json": "{}\n",
    "tests/fixtures/tinystories_sample.txt": "Once upon a time\n",
    "tests/_snapshots/test_linear.npz": "",
    "test_results.xml": "<testsuites/>\n",
    "out/run.log": "step 1\n",
    ".git/HEAD": "ref: refs/heads/main\n",
    ".venv/pyvenv.cfg": "home = /usr/bin\n",
}
ZEROS = 1 << 20
GIB = 1 << 30


def write_checkout(dest: Path, submission: synthetic.Synthetic = synthetic.CORRECT) -> Path:
    """A student's checkout: the bundled implementation (with `submission`'s change), the
    handout's tests, fixtures and lock file, a run's outputs, git and a virtual env."""
    synthetic.write_submission(dest, submission)
    for name, text in CHECKOUT_FILES.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text)
    (dest / "cs336_basics" / "__pycache__").mkdir(exist_ok=True)
    (dest / "cs336_basics" / "__pycache__" / "model.cpython-312.pyc").write_bytes(b"\0")
    return dest


def _excluded(path: str) -> bool:
    return any(fnmatch.fnmatch(path, pattern) for pattern in MAKE_SUBMISSION_EXCLUDES)


def make_submission_zip(checkout: Path, dest: Path, folder: str = "") -> Path:
    """What make_submission.sh makes of `checkout` (`zip -r` from its root, folders as
    entries of their own); `folder`: the entries under it, as in a zip of the folder
    holding the checkout."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(checkout.rglob("*")):
            name = path.relative_to(checkout).as_posix()
            if _excluded(name) or any(_excluded(str(p)) for p in Path(name).parents[:-1]):
                continue
            archive.write(path, f"{folder}{name}" + "/" * path.is_dir())
    return dest


def tarball(folder: Path, dest: Path, mode: str = "w:gz") -> Path:
    """`tar -czf dest folder` (or another compression, by `mode`), the folder at its top."""
    with tarfile.open(dest, mode) as archive:
        archive.add(folder, folder.name, filter=lambda m: None if "__pycache__" in m.name else m)
    return dest


def zipped(folder: Path, dest: Path, top: str | None = None, mac: bool = False) -> Path:
    """A zip of `folder`'s files under `top`/ (default: its name), as a file manager
    makes one; `mac`: with macOS's `__MACOSX/` resource forks beside them."""
    top = folder.name if top is None else top
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            name = f"{top}/{path.relative_to(folder).as_posix()}".lstrip("/")
            archive.write(path, name)
            if mac:
                archive.writestr(f"__MACOSX/{name.rpartition('/')[0]}/._{path.name}", b"\0" * 82)
    return dest


# -- hostile archives ---------------------------------------------------------------------

_LOCAL = struct.Struct("<4s5H3L2H")
_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")
_END64 = struct.Struct("<4sQ2H2L4Q")
_LOCATOR = struct.Struct("<4sLQL")


def _deflated_zeros(count: int) -> tuple[bytes, int]:
    """`count` MiB of zeros, deflated (raw), and their CRC-32."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = compressor.compress(bytes(ZEROS)) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(count):
        crc = zlib.crc32(bytes(ZEROS), crc)
    return block * count + compressor.flush(), crc


def _raw_zip(name: str, data: bytes, crc: int, size: int, header_size: int | None = None) -> bytes:
    """A zip of one deflated member `name` of `size` bytes, whose headers declare
    `header_size` (default: `size`)."""
    declared = size if header_size is None else header_size
    encoded = name.encode()
    fields = (20, 0, 8, 0, 0, crc, len(data), declared, len(encoded))
    local = _LOCAL.pack(b"PK\x03\x04", *fields, 0) + encoded
    central = _CENTRAL.pack(b"PK\x01\x02", 20, *fields, 0, 0, 0, 0, 0, 0) + encoded
    end = _END.pack(b"PK\x05\x06", 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    return local + data + central + end


def zip_bomb(dest: Path, gib: int = 1) -> Path:
    """`gib` GiB of zeros in a 1 MB zip, its headers honest."""
    data, crc = _deflated_zeros(gib * 1024)
    dest.write_bytes(_raw_zip("cs336_basics/weights.bin", data, crc, gib * GIB))
    return dest


def lying_zip_bomb(dest: Path) -> Path:
    """A GiB of zeros whose headers declare a KiB (and the GiB's CRC)."""
    data, crc = _deflated_zeros(1024)
    dest.write_bytes(_raw_zip("cs336_basics/weights.bin", data, crc, GIB, header_size=1024))
    return dest


def tar_bomb(dest: Path, gib: int = 1) -> Path:
    """A tar.gz of `gib` GiB of zeros in one member: gzip members, each a MiB of the data,
    one repeated (gzip reads concatenated members as one stream)."""
    header = tarfile.TarInfo("cs336_basics/weights.bin")
    header.size = gib * GIB
    mib = gzip.compress(bytes(ZEROS), compresslevel=9)
    with dest.open("wb") as out:
        out.write(gzip.compress(header.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(gib * 1024):
            out.write(mib)
        out.write(gzip.compress(bytes(2 * tarfile.BLOCKSIZE)))
    return dest


def million_zip(dest: Path, count: int = 1_000_000) -> Path:
    """A zip of `count` empty members, one central directory entry repeated (ZIP64)."""
    name = b"f"
    local = _LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0) + name
    entry = _CENTRAL.pack(b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(name), 0, 0, 0, 0, 0, 0)
    directory = (entry + name) * count
    end64 = _END64.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, count, count, len(directory), len(local))
    locator = _LOCATOR.pack(b"PK\x06\x07", 0, len(local) + len(directory), 1)
    end = _END.pack(b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    dest.write_bytes(local + directory + end64 + locator + end)
    return dest


def million_tar(dest: Path, count: int = 1_000_000) -> Path:
    """A tar.gz of `count` empty members named `f`, one header repeated."""
    header = tarfile.TarInfo("f").tobuf(format=tarfile.GNU_FORMAT)
    thousand = header * 1000
    with gzip.open(dest, "wb", compresslevel=1) as out:
        for _ in range(count // 1000):
            out.write(thousand)
        out.write(bytes(2 * tarfile.BLOCKSIZE))
    return dest


def _zip_link(archive: zipfile.ZipFile, name: str, target: str) -> None:
    """A symbolic link member, as Info-ZIP stores one: its mode says link, its data is the
    target."""
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive.writestr(info, target)


def escaping_zip(dest: Path, submission: Path, outside: Path, separator: str = "/") -> Path:
    """A correct submission's zip with a member that climbs out (`../`, enough of them to
    reach `/` from anywhere) to `outside`; `separator`: `\\` as PowerShell 5 writes."""
    zipped(submission, dest, top="")
    with zipfile.ZipFile(dest, "a") as archive:
        climb = f"..{separator}" * 40 + str(outside).lstrip("/").replace("/", separator)
        archive.writestr(climb, "pwned\n")
    return dest


def absolute_tar(dest: Path, submission: Path, outside: Path) -> Path:
    """A correct submission's tarball with a member at the absolute path `outside`."""
    data = b"pwned\n"
    info = tarfile.TarInfo(str(outside))
    info.size = len(data)
    with tarfile.open(dest, "w:gz") as archive:
        archive.add(submission, submission.name)
        archive.addfile(info, io.BytesIO(data))
    return dest


def _without_adapters(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if member.name == "tests/adapters.py" else member


def linking_tar(dest: Path, submission: Path, fixtures: Path) -> Path:
    """A submission whose tarball replaces its adapters by a symbolic link to a classmate's
    and carries links to the host and to the fixtures, hard and symbolic, a FIFO and a
    device (setuid, all of them): a link followed would read what is not its own."""
    with tarfile.open(dest, "w:gz") as archive:
        for child in sorted(submission.iterdir()):
            archive.add(child, child.name, filter=_without_adapters)
        links = {
            "tests/adapters.py": (tarfile.SYMTYPE, "../../victim/tests/adapters.py"),
            "cs336_basics/answers": (tarfile.SYMTYPE, str(fixtures)),
            "cs336_basics/passwd": (tarfile.SYMTYPE, "/etc/passwd"),
            "cs336_basics/hard_passwd": (tarfile.LNKTYPE, "/etc/passwd"),
            "cs336_basics/hard_manifest": (tarfile.LNKTYPE, str(fixtures / "MANIFEST.sha256")),
            "cs336_basics/pipe": (tarfile.FIFOTYPE, ""),
            "cs336_basics/null": (tarfile.CHRTYPE, ""),
        }
        for name, (kind, target) in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, target, 0o4777
            archive.addfile(info)
    return dest


def linking_zip(dest: Path, submission: Path, fixtures: Path) -> Path:
    """A correct submission's zip beside symbolic link members to the host and the fixtures."""
    zipped(submission, dest, top="")
    with zipfile.ZipFile(dest, "a") as archive:
        _zip_link(archive, "cs336_basics/passwd", "/etc/passwd")
        _zip_link(archive, "cs336_basics/answers", str(fixtures))
    return dest


def truncated(archive: Path, dest: Path) -> Path:
    """The first half of `archive`'s bytes."""
    data = archive.read_bytes()
    dest.write_bytes(data[: len(data) // 2])
    return dest


def two_submissions(dest: Path, first: Path, second: Path) -> Path:
    """A zip holding two submissions side by side."""
    with zipfile.ZipFile(dest, "w") as archive:
        for folder in (first, second):
            for path in sorted(p for p in folder.rglob("*") if p.is_file()):
                archive.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
    return dest


def no_submission(dest: Path) -> Path:
    """A zip of a report and notes, no code."""
    with zipfile.ZipFile(dest, "w") as archive:
        archive.writestr("writeup.pdf", b"%PDF-1.4\n")
        archive.writestr("notes/ideas.md", "# ideas\n")
    return dest


def copy_into(archive: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(archive, folder / archive.name))


def tree(folder: Path) -> set[str]:
    """Every path below `folder` (relative), links unfollowed."""
    return {
        os.path.relpath(os.path.join(d, n), folder)
        for d, dirs, files in os.walk(folder)
        for n in dirs + files
    }
