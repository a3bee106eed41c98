"""Submissions handed in as archives: found like uploads, unpacked within the intake's limits,
and hostile ones refused in one line, alone, with nothing written outside their folder. The
unit tests unpack directly (milliseconds to a second each); one grading run grades a class of
archives and folders, hostile members among them, to the end."""

from __future__ import annotations

import os
import stat
import tarfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cs336_harness.grading.intake.archives import SUFFIXES, archive_stem, unpack
from cs336_harness.grading.intake.copy import (
    DEFAULT_LIMITS,
    IntakeLimits,
    IntakeRefused,
    copy_submission,
)
from cs336_harness.grading.intake.submissions import discover, unpack_submission
from cs336_harness.paths import REPO_ROOT
from tests.grading import handed_in, synthetic
from tests.grading.conftest import TEST_TIMEOUT, GradingRun, grade, statuses

LINK = "symbolic link, not followed"
FIXTURES = REPO_ROOT / "tests" / "fixtures"
# How much CPU time a refusal may take (the slowest, a tar bomb's 256 MiB decompressed,
# takes 0.9 s): the archives below would take minutes, or gigabytes, to unpack. CPU time,
# not wall-clock time, which others' load stretches (the tar bomb's took 5.1 s with the
# load at 10 on two cores, 2026-11-27).
FAST = 5.0


@pytest.fixture
def alice(tmp_path: Path) -> Path:
    return synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The folder an archive is unpacked in (as `unpacked/`): nothing else may appear."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def _refused(archive: Path, work: Path, limits: IntakeLimits = DEFAULT_LIMITS) -> str:
    """The refusal's line, checked to have come fast (in this process's CPU time) and
    written nothing outside `work`."""
    work.mkdir(parents=True, exist_ok=True)
    started = time.process_time()
    with pytest.raises(IntakeRefused) as refusal:
        unpack_submission(archive, work / "unpacked", limits)
    assert time.process_time() - started < FAST
    assert {p.split("/")[0] for p in handed_in.tree(work)} <= {"unpacked"}
    reason = str(refusal.value)
    assert "\n" not in reason and reason.startswith(f"{archive.name}: ")
    return reason.removeprefix(f"{archive.name}: ")


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# -- as students hand them in -----------------------------------------------------------


def test_a_make_submission_zip_is_graded_on_its_code(tmp_path: Path, work: Path):
    """Upstream's make_submission.sh zips a checkout from its root, without fixtures, data
    or caches: the copy graded is the code its adapters import, as from the checkout."""
    checkout = handed_in.write_checkout(tmp_path / "checkout")
    archive = handed_in.make_submission_zip(checkout, tmp_path / "submission.zip")
    names = zipfile.ZipFile(archive).namelist()
    assert "tests/adapters.py" in names and "cs336_basics/" in names
    assert not [n for n in names if n.endswith((".json", ".txt", ".pyc")) or n.startswith(".")]
    found, left_out = unpack_submission(archive, work / "unpacked")
    assert found == work / "unpacked" and left_out == []
    copy_submission(found, tmp_path / "copy")
    copy_submission(checkout, tmp_path / "from_checkout")
    assert _files(tmp_path / "copy") == _files(tmp_path / "from_checkout")


ARCHIVES: dict[str, Callable[[Path, Path], Path]] = {
    "alice.zip": lambda folder, dest: handed_in.zipped(folder, dest, top=""),
    "parent.zip": lambda folder, dest: handed_in.zipped(folder, dest, mac=True),
    "alice.tar": lambda folder, dest: handed_in.tarball(folder, dest, "w"),
    "alice.tar.gz": handed_in.tarball,
    "alice.tgz": handed_in.tarball,
    "alice.tar.bz2": lambda folder, dest: handed_in.tarball(folder, dest, "w:bz2"),
    "alice.tar.xz": lambda folder, dest: handed_in.tarball(folder, dest, "w:xz"),
    "repository.ZIP": lambda folder, dest: handed_in.zipped(folder, dest, top="repo/assignment1"),
    "gzipped.tar.xz": handed_in.tarball,  # named wrongly: read as its first bytes say
}


@pytest.mark.parametrize("name", list(ARCHIVES))
def test_every_format_and_layout_unpacks_to_the_same_submission(
    alice: Path, tmp_path: Path, work: Path, name: str
):
    archive = ARCHIVES[name](alice, tmp_path / name)
    found, left_out = unpack_submission(archive, work / "unpacked")
    assert left_out == []
    assert _files(found) == _files(alice)
    # Nothing of the archive's own modes: the folders and files are the grader's, private.
    modes = {stat.S_IMODE(os.lstat(p).st_mode) for p in [work / "unpacked", *found.rglob("*")]}
    assert modes == {0o700, 0o600}


def test_a_zip_with_a_comment_or_a_stub_before_it_is_read(alice: Path, tmp_path: Path, work: Path):
    archive = handed_in.zipped(alice, tmp_path / "a.zip", top="")
    with zipfile.ZipFile(archive, "a") as opened:
        opened.comment = b"made by hand " * 100
    stubbed = tmp_path / "stubbed.zip"  # a self-extracting archive's program, then the zip
    stubbed.write_bytes(b"#!/bin/sh\nexit 0\n" + archive.read_bytes())
    for each in (archive, stubbed):
        found, _ = unpack_submission(each, work / each.stem)
        assert _files(found) == _files(alice)


def test_a_class_of_archives_and_folders_is_named_and_ordered_by_name(alice: Path, tmp_path: Path):
    members = tmp_path / "class"
    members.mkdir()
    for name in ("carol.tar.gz", "bob.ZIP", "dave.zip"):
        handed_in.tarball(alice, members / name)
    (members / "dave").mkdir()  # a folder and an archive of one name
    (members / "erin.zip").mkdir()  # a folder named like an archive is a folder
    (members / "roster.txt").write_text("alice\n")
    (members / ".hidden.zip").write_bytes(b"")
    (members / "mallory.zip").symlink_to(members / "bob.ZIP")  # kept, to be refused
    found = discover([members])
    assert [(name, path.name) for name, path in found] == [
        ("bob", "bob.ZIP"),
        ("carol", "carol.tar.gz"),
        ("dave", "dave"),
        ("dave-2", "dave.zip"),
        ("erin.zip", "erin.zip"),
        ("mallory", "mallory.zip"),
    ]
    assert discover([members / "carol.tar.gz"]) == [("carol", members.resolve() / "carol.tar.gz")]
    assert [archive_stem(f"x{s}") for s in SUFFIXES] == ["x"] * len(SUFFIXES)
    assert archive_stem(".zip") is None and archive_stem("x.gz") is None


# -- hostile archives ---------------------------------------------------------------------


def test_a_zip_bomb_is_refused_unread(tmp_path: Path, work: Path):
    archive = handed_in.zip_bomb(tmp_path / "bomb.zip")  # 1 GiB of zeros in 1 MB
    assert archive.stat().st_size < 2 << 20
    assert _refused(archive, work) == "unpacks to 1073741824 bytes, over the limit of 256 MiB"
    assert handed_in.tree(work) == {"unpacked"}


def test_a_zip_bomb_whose_headers_lie_is_refused_at_the_bytes_declared(tmp_path: Path, work: Path):
    """Its headers say a KiB: no more than a KiB is decompressed, which fails its check."""
    archive = handed_in.lying_zip_bomb(tmp_path / "lying.zip")
    reason = _refused(archive, work)
    assert reason == "not a readable archive: Bad CRC-32 for file 'cs336_basics/weights.bin'"
    written = [p for p in (work / "unpacked").rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in written) <= 1024


def test_a_tar_bomb_is_refused_at_the_bytes_it_unpacks_to(tmp_path: Path, work: Path):
    """A compressed tar's data is decompressed even to pass over it: counted as it comes
    out, and stopped at the limit, a quarter of the GiB it holds. (A tar header's size is
    where the next member starts, so there is no lying about it.)"""
    archive = handed_in.tar_bomb(tmp_path / "bomb.tar.gz")
    assert archive.stat().st_size < 2 << 20
    assert _refused(archive, work) == "unpacks to more than 256 MiB"
    assert handed_in.tree(work) == {"unpacked"}  # the GiB member was left out, not written


@pytest.mark.parametrize("separator", ["/", "\\"])
def test_a_member_climbing_out_is_refused(alice: Path, tmp_path: Path, work: Path, separator: str):
    outside = tmp_path / "escaped.py"
    archive = handed_in.escaping_zip(tmp_path / "escape.zip", alice, outside, separator)
    assert _refused(archive, work).startswith("a member outside the archive's folder: ../../")
    assert not outside.exists()


def test_a_member_at_an_absolute_path_is_refused(alice: Path, tmp_path: Path, work: Path):
    outside = tmp_path / "absolute.py"
    archive = handed_in.absolute_tar(tmp_path / "absolute.tar.gz", alice, outside)
    assert _refused(archive, work) == f"a member with an absolute path: {outside}"
    assert not outside.exists()
    drive = tmp_path / "drive.zip"
    with zipfile.ZipFile(drive, "w") as opened:
        opened.writestr("C:/Windows/evil.py", "")
    assert _refused(drive, work / "drive") == "a member with an absolute path: C:/Windows/evil.py"


def test_links_devices_and_fifos_are_left_out_with_notes(alice: Path, tmp_path: Path, work: Path):
    archive = handed_in.linking_tar(tmp_path / "links.tar.gz", alice, FIXTURES)
    found, left_out = unpack_submission(archive, work / "unpacked")
    assert [str(x) for x in left_out] == [
        f"tests/adapters.py ({LINK})",
        f"cs336_basics/answers ({LINK})",
        f"cs336_basics/passwd ({LINK})",
        "cs336_basics/hard_passwd (hard link, not followed)",
        "cs336_basics/hard_manifest (hard link, not followed)",
        "cs336_basics/pipe (FIFO, not a regular file)",
        "cs336_basics/null (character device, not a regular file)",
    ]
    made = [os.lstat(p).st_mode for p in found.rglob("*")]
    assert all(stat.S_ISREG(m) or stat.S_ISDIR(m) for m in made)
    assert not any(m & (stat.S_ISUID | stat.S_ISGID) for m in made)
    assert not (found / "tests" / "adapters.py").exists()
    zip_archive = handed_in.linking_zip(tmp_path / "links.zip", alice, FIXTURES)
    found, left_out = unpack_submission(zip_archive, work / "zip")
    assert [str(x) for x in left_out] == [
        f"cs336_basics/passwd ({LINK})",
        f"cs336_basics/answers ({LINK})",
    ]
    assert _files(found) == _files(alice)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_a_million_members_are_refused_at_the_count_limit(
    tmp_path: Path, work: Path, kind: str, monkeypatch: pytest.MonkeyPatch
):
    make = handed_in.million_zip if kind == "zip" else handed_in.million_tar
    archive = make(tmp_path / f"million.{kind}")
    # zipfile reads a whole central directory when it opens one (8 s and 400 MB for this
    # one): it is never asked to.
    monkeypatch.setattr(zipfile, "ZipFile", None)
    assert _refused(archive, work) == f"more than {DEFAULT_LIMITS.files} files and folders"
    # A zip's directory is counted before anything is written; a tar's as it is read.
    assert len(handed_in.tree(work / "unpacked")) <= (0 if kind == "zip" else 1)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_a_truncated_archive_is_refused_in_one_line(
    alice: Path, tmp_path: Path, work: Path, kind: str
):
    whole = ARCHIVES[f"alice.{kind}"](alice, tmp_path / f"whole.{kind}")
    archive = handed_in.truncated(whole, tmp_path / f"truncated.{kind}")
    assert _refused(archive, work).startswith("not a readable archive: ")
    garbage = tmp_path / f"garbage.{kind}"
    garbage.write_bytes(b"this is not an archive\n" * 10)
    assert _refused(garbage, work / "garbage").startswith("not a readable archive: ")


def _patched(archive: Path, dest: Path, offset: int, value: bytes) -> Path:
    """`archive` with `value` written at `offset` of its central directory's first entry."""
    data = bytearray(archive.read_bytes())
    at = data.index(b"PK\x01\x02") + offset
    data[at : at + len(value)] = value
    dest.write_bytes(bytes(data))
    return dest


def test_what_zipfile_raises_on_a_malformed_zip_is_a_refusal(tmp_path: Path, work: Path):
    """Found by fuzzing: errors zipfile raises beyond BadZipFile, which would have stopped
    the whole run instead of refusing one archive."""
    archive = _zip_of(tmp_path, {"cs336_basics/__init__.py": b""})
    version = _patched(archive, tmp_path / "version.zip", 6, b"\xad")  # "version 17.3"
    assert _refused(version, work / "a") == "not a readable archive: zip file version 17.3"
    name = _zip_of(tmp_path, {"cs336_basics/\xff.py": b""})  # flagged UTF-8
    utf8 = _patched(name, tmp_path / "utf8.zip", 46 + len("cs336_basics/"), b"\xff\xfe")
    assert _refused(utf8, work / "b").startswith("not a readable archive: 'utf-8' codec can't")


def test_an_archive_with_no_submission_or_two_is_refused(alice: Path, tmp_path: Path, work: Path):
    empty = handed_in.no_submission(tmp_path / "writeup.zip")
    assert _refused(empty, work / "a") == (
        "holds no submission (cs336_basics/ or tests/adapters.py, at its top or up to 3 "
        "folders down); it holds notes, writeup.pdf"
    )
    bob = synthetic.write_submission(tmp_path / "bob", synthetic.CORRECT)
    two = handed_in.two_submissions(tmp_path / "two.zip", alice, bob)
    assert _refused(two, work / "b") == "holds 2 submissions (alice/, bob/): hand in one"


def _zip_of(tmp_path: Path, names: dict[str, bytes]) -> Path:
    archive = tmp_path / "names.zip"
    with zipfile.ZipFile(archive, "w") as opened:
        for name, data in names.items():
            opened.writestr(name, data)
    return archive


def test_depth_path_and_name_lengths_are_refused_as_the_folder_intake_does(
    tmp_path: Path, work: Path
):
    deep = _zip_of(tmp_path, {"cs336_basics/" + "d/" * 40 + "model.py": b""})
    assert _refused(deep, work / "a").startswith("folders nested more than 32 deep: cs336_basics/d")
    long = _zip_of(tmp_path, {"cs336_basics/" + ("n" * 200 + "/") * 6 + "model.py": b""})
    assert "bytes, over the limit of 1024: cs336_basics/nnn" in _refused(long, work / "b")
    name = _zip_of(tmp_path, {"cs336_basics/" + "n" * 300 + ".py": b""})
    assert _refused(name, work / "c").startswith("a name of 303 bytes, over the limit of 255: ")


def test_a_large_file_is_left_out_and_too_much_in_all_is_refused(tmp_path: Path, work: Path):
    files = {"cs336_basics/__init__.py": b"", "cs336_basics/big.bin": bytes(17 << 20)}
    archive = _zip_of(tmp_path, files | {"cs336_basics/Icon\r": b"", "cs336_basics/a.py": b""})
    _, left_out = unpack_submission(archive, work / "a")
    assert [str(x) for x in left_out] == [
        "cs336_basics/big.bin (17825792 bytes, over the limit of 16 MiB for one file)",
        "cs336_basics/Icon\r (a control character in its name, not unpacked)",
    ]
    assert _files(work / "a") == {"cs336_basics/__init__.py": b"", "cs336_basics/a.py": b""}
    limits = IntakeLimits(apparent_bytes=4 << 20, file_bytes=1 << 20)
    many = _zip_of(tmp_path, {f"cs336_basics/{i}.bin": bytes(1 << 20) for i in range(6)})
    assert _refused(many, work / "b", limits) == "more than 4 MiB of files to unpack"
    written = [p.stat().st_size for p in (work / "b").rglob("*") if p.is_file()]
    assert sum(written) <= limits.apparent_bytes
    small = IntakeLimits(archive_bytes=1 << 20)
    assert _refused(many, work / "c", small).startswith("an archive of ")


def test_a_tar_header_past_its_limit_is_refused_before_it_is_read(tmp_path: Path, work: Path):
    archive = tmp_path / "pax.tar"
    info = tarfile.TarInfo("cs336_basics/model.py")
    info.pax_headers = {"comment": "x" * (2 << 20)}
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as opened:
        opened.addfile(info)
    assert _refused(archive, work).startswith("a tar header of 2097")


def test_an_archive_that_is_a_link_or_a_fifo_is_refused(alice: Path, tmp_path: Path, work: Path):
    archive = handed_in.zipped(alice, tmp_path / "real.zip")
    (tmp_path / "mallory.zip").symlink_to(archive)
    assert _refused(tmp_path / "mallory.zip", work / "a") == LINK
    os.mkfifo(tmp_path / "pipe.tar")  # opening it to read would wait for a writer
    assert _refused(tmp_path / "pipe.tar", work / "b") == "FIFO, not a regular file"


def test_a_member_named_twice_is_unpacked_once(tmp_path: Path, work: Path):
    archive = tmp_path / "twice.zip"
    with zipfile.ZipFile(archive, "w") as opened, pytest.warns(UserWarning):
        opened.writestr("cs336_basics/__init__.py", b"first")
        opened.writestr("cs336_basics/__init__.py", b"second")
    found, left_out = unpack_submission(archive, work / "unpacked")
    assert [str(x) for x in left_out] == [
        "cs336_basics/__init__.py (a second member of this name, not unpacked)"
    ]
    assert (found / "cs336_basics" / "__init__.py").read_bytes() == b"first"
    assert unpack(archive, work / "again") == left_out


# -- one grading run ------------------------------------------------------------------


@pytest.fixture(scope="module")
def archive_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GradingRun]:
    """A class as staff download it: a folder (the control, `victim`), make_submission.sh
    zips, a tarball of a whole repository, and hostile archives, graded two at a time.
    Four run tests: the victim, `alice` and `bob` (correct), and `linker`, whose adapters
    are a link to the victim's; the others are refused before any test runs."""
    root = tmp_path_factory.mktemp("archives")
    members, scratch = root / "class", root / "scratch"
    victim = synthetic.write_submission(members / "victim", synthetic.CORRECT)
    checkout = handed_in.write_checkout(scratch / "assignment1-basics")
    handed_in.make_submission_zip(checkout, members / "alice.zip")
    handed_in.make_submission_zip(checkout, members / "bob.zip", folder="assignment1-basics/")
    wrong = synthetic.write_submission(scratch / "wrong", synthetic.WRONG_SOFTMAX)
    handed_in.linking_tar(members / "linker.tar.gz", wrong, FIXTURES)
    handed_in.zip_bomb(members / "bomb.zip")
    handed_in.lying_zip_bomb(members / "lying.zip")
    handed_in.escaping_zip(members / "escape.zip", victim, root / "escaped.py")
    handed_in.absolute_tar(members / "absolute.tar.gz", victim, root / "absolute.py")
    handed_in.million_zip(members / "million.zip")
    handed_in.truncated(handed_in.tarball(victim, scratch / "t.tar.gz"), members / "cut.tar.gz")
    handed_in.no_submission(members / "writeup.zip")
    bob = synthetic.write_submission(scratch / "bob", synthetic.CORRECT)
    handed_in.two_submissions(members / "pair.zip", victim, bob)
    yield grade(
        members, "-j2", "--stored-inputs", f"--test-timeout={TEST_TIMEOUT}", out=root / "out"
    )


GRADED = ("alice", "bob", "victim")
REFUSED = {
    "absolute": "not graded: absolute.tar.gz: a member with an absolute path: /",
    "bomb": "not graded: bomb.zip: unpacks to 1073741824 bytes, over the limit of 256 MiB",
    "cut": "not graded: cut.tar.gz: not a readable archive: Compressed file ended before",
    "escape": "not graded: escape.zip: a member outside the archive's folder: ../../",
    "lying": "not graded: lying.zip: not a readable archive: Bad CRC-32 for file",
    "million": "not graded: million.zip: more than 10000 files and folders",
    "pair": "not graded: pair.zip: holds 2 submissions (bob/, victim/): hand in one",
    "writeup": "not graded: writeup.zip: holds no submission (cs336_basics/ or tests/adapters.py",
}


def test_a_class_of_archives_is_graded_to_the_end(archive_run: GradingRun):
    assert archive_run.returncode == 0, archive_run.stderr
    assert set(archive_run.summary()) == {*GRADED, *REFUSED, "linker"}
    # Nothing any archive named outside its folder was written.
    root = archive_run.out.parent
    assert not (root / "escaped.py").exists() and not (root / "absolute.py").exists()


@pytest.mark.parametrize("name", GRADED)
def test_make_submission_zips_keep_every_point(archive_run: GradingRun, name: str):
    results = archive_run.results(name)
    assert results["score"] == results["max_score"] > 0
    assert set(statuses(results).values()) == {"passed"}
    notes = [ln for ln in results["output"].splitlines() if ln.startswith("note: ")]
    assert synthetic.notes_of_its_own(notes) == []


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_hostile_archive_errs_alone_with_one_line(archive_run: GradingRun, name: str):
    results = archive_run.results(name)
    assert results["score"] == 0
    assert set(statuses(results).values()) == {"error"}
    assert all(t["output"].startswith(f"error: {REFUSED[name]}") for t in results["tests"])
    assert archive_run.summary()[name]["workers"] == "0"  # none of its code ran


def test_an_archive_of_links_earns_nothing_and_the_notes_say_why(archive_run: GradingRun):
    results = archive_run.results("linker")
    assert results["score"] == 0
    missing = "cannot import adapters: FileNotFoundError: no adapters file"
    assert all(missing in t["output"] for t in results["tests"])
    notes = [ln for ln in results["output"].splitlines() if ln.startswith("note: ")]
    notes = synthetic.notes_of_its_own(notes)
    assert [n.removeprefix("note: left out of the copy graded: ") for n in notes] == [
        f"tests/adapters.py ({LINK})",
        f"cs336_basics/answers ({LINK})",
        f"cs336_basics/passwd ({LINK})",
        "cs336_basics/hard_passwd (hard link, not followed)",
        "cs336_basics/hard_manifest (hard link, not followed)",
        "cs336_basics/pipe (FIFO, not a regular file)",
        "cs336_basics/null (character device, not a regular file)",
    ]
