"""The intake: what of a submission's directory the grader copies, within which limits, and
what a submission past them gets. The unit tests copy directly (milliseconds each); one
grading run shows a class with hostile members graded to the end, each on its own code."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from cs336_harness.grading.intake.copy import (
    DEFAULT_LIMITS,
    IntakeLimits,
    IntakeRefused,
    _Copy,
    copy_submission,
)
from cs336_harness.grading.intake.submissions import BUNDLED, discover
from cs336_harness.paths import REPO_ROOT
from cs336_harness.rules.static_scan import scan_submission
from tests.grading import synthetic
from tests.grading.conftest import TEST_TIMEOUT, GradingRun, grade, statuses

LINK = "symbolic link, not followed"


_FOLDER = os.O_RDONLY | os.O_DIRECTORY


def _nest(directory: Path, name: str, levels: int) -> None:
    """`levels` folders named `name`, each in the last, a file in the deepest: by descriptor,
    since the path of the deepest may be past what the kernel takes in one (PATH_MAX)."""
    fd = os.open(directory, _FOLDER)
    for _ in range(levels):
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, _FOLDER, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("model.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    os.close(fd)


def _unnest(directory: Path, name: str) -> None:
    """Undo `_nest`, climbing back by `..`: shutil.rmtree (and so pytest's clean-up of old
    temporary directories) recurses once per level, and a thousand is past Python's limit."""
    fd, levels = os.open(directory, _FOLDER), 0
    with contextlib.suppress(FileNotFoundError):
        while True:
            inner = os.open(name, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd, levels = inner, levels + 1
    os.unlink("model.py", dir_fd=fd)
    for _ in range(levels):
        parent = os.open("..", _FOLDER, dir_fd=fd)
        os.close(fd)
        os.rmdir(name, dir_fd=parent)
        fd = parent
    os.close(fd)


def _copied(copy: Path) -> dict[str, os.stat_result]:
    """Every path of a copy (relative) and its status, walked by descriptor for the same
    reason; links are not followed."""
    found: dict[str, os.stat_result] = {}
    if not copy.exists():
        return found
    stack = [(os.open(copy, os.O_RDONLY | os.O_DIRECTORY), "")]
    while stack:
        fd, prefix = stack.pop()
        with os.scandir(fd) as entries:
            for entry in entries:
                relative = prefix + entry.name
                found[relative] = entry.stat(follow_symlinks=False)
                if entry.is_dir(follow_symlinks=False):
                    inner = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
                    stack.append((inner, relative + "/"))
        os.close(fd)
    return found


@pytest.fixture
def submission(tmp_path: Path) -> Path:
    return synthetic.write_submission(tmp_path / "alice", synthetic.CORRECT)


def _refused(source: Path, dest: Path, limits: IntakeLimits = DEFAULT_LIMITS) -> str:
    with pytest.raises(IntakeRefused) as refusal:
        copy_submission(source, dest, limits)
    return str(refusal.value)


def test_a_submission_contributes_its_package_and_adapters_without_debris(
    submission: Path, tmp_path: Path
):
    package = submission / "cs336_basics"
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    (package / "stale.pyc").write_bytes(b"\0")
    (submission / "tests" / "conftest.py").write_text("raise SystemExit\n")
    (submission / "notes.txt").write_text("not graded\n")
    assert copy_submission(submission, tmp_path / "copy") == []
    copied = _copied(tmp_path / "copy")
    wanted = {
        f"cs336_basics/{p.relative_to(package)}"
        for p in package.rglob("*")
        if p.suffix == ".py" or (p.is_dir() and p.name != "__pycache__")
    }
    assert set(copied) == {"cs336_basics", "tests", "tests/adapters.py", *wanted}
    for relative in ("tests/adapters.py", "cs336_basics/__init__.py"):
        assert (tmp_path / "copy" / relative).read_bytes() == (submission / relative).read_bytes()


def test_the_code_its_adapters_can_import_comes_along_and_nothing_else(
    submission: Path, tmp_path: Path
):
    # As real checkouts are: a top-level module and package of their own beside the package,
    # upstream's tests/common.py, its test modules and fixtures, data and a run folder.
    tests = submission / "tests"
    for name in ("__init__.py", "common.py", "test_model.py", "tokenizer_test.py"):
        (tests / name).write_text("# tests\n")
    (tests / "fixtures").mkdir()
    (tests / "fixtures" / "corpus.en").write_text("text\n")
    (submission / "helpers.py").write_text("# helpers\n")
    (submission / "scripts" / "train").mkdir(parents=True)
    (submission / "scripts" / "__init__.py").write_text("")
    (submission / "scripts" / "train" / "loop.py").write_text("# loop\n")
    (submission / "scripts" / "train" / "config.yaml").write_text("lr: 1\n")
    (submission / "wandb" / "run-1").mkdir(parents=True)
    (submission / "wandb" / "run-1" / "log.py").write_text("# not a package\n")
    (submission / "data.bin").write_bytes(b"\0" * 100)
    (submission / "setup.cfg").write_text("[x]\n")
    assert copy_submission(submission, tmp_path / "copy") == []
    copied = {p for p in _copied(tmp_path / "copy") if not p.startswith("cs336_basics")}
    assert copied == {
        "tests", "tests/adapters.py", "tests/__init__.py", "tests/common.py",
        "helpers.py", "scripts", "scripts/__init__.py", "scripts/train", "scripts/train/loop.py",
    }  # fmt: skip


def test_the_self_check_reads_the_bundled_implementation_not_the_harness(tmp_path: Path):
    """`uv run cs336-grade` with no argument grades this checkout, whose other top-level
    packages are the harness and the staff's (the oracle among them): they are not the
    implementation's, so neither copied nor read for the rules."""
    [(name, checkout)] = discover([])
    assert name == BUNDLED
    assert copy_submission(checkout, tmp_path / "copy") == []
    copied = _copied(tmp_path / "copy")
    assert {p for p in copied if not p.startswith("cs336_basics/")} == {
        "cs336_basics", "tests", "tests/__init__.py", "tests/adapters.py", "tests/common.py",
    }  # fmt: skip
    assert scan_submission(tmp_path / "copy", whole=True) == ([], [])


def test_a_checkout_of_the_handout_contributes_its_own_modules_not_the_harness(
    submission: Path, tmp_path: Path
):
    """A student's checkout of the handout holds `cs336_harness/`, which the worker never
    imports from it (the grader's own is imported): only the student's own modules come
    along, and only they are read for the rules."""
    shutil.copytree(
        REPO_ROOT / "cs336_harness",
        submission / "cs336_harness",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (submission / "helpers.py").write_text("import torch\nlinear = torch.nn.Linear\n")
    assert copy_submission(submission, tmp_path / "copy") == []
    top = {p for p in _copied(tmp_path / "copy") if "/" not in p}
    assert top == {"cs336_basics", "tests", "helpers.py"}
    findings, _ = scan_submission(tmp_path / "copy", whole=True)
    assert [str(f) for f in findings] == ["helpers.py:2: torch.nn.Linear"]


def test_a_thousand_nested_folders_are_refused_at_the_depth_limit(submission: Path, tmp_path: Path):
    _nest(submission / "cs336_basics", "d", 1000)
    try:
        reason = _refused(submission, tmp_path / "copy")
    finally:
        _unnest(submission / "cs336_basics", "d")
    assert reason.startswith(
        f"folders nested more than {DEFAULT_LIMITS.depth} deep: cs336_basics/d/d"
    )
    deepest = max(relative.count("/") + 1 for relative in _copied(tmp_path / "copy"))
    assert deepest <= DEFAULT_LIMITS.depth


def test_a_path_past_path_max_is_refused_at_the_length_limit(submission: Path, tmp_path: Path):
    name_max = os.pathconf(submission, "PC_NAME_MAX")
    path_max = os.pathconf(submission, "PC_PATH_MAX")
    levels = path_max // name_max + 1
    _nest(submission / "cs336_basics", "n" * name_max, levels)  # each name as long as can be
    reason = _refused(submission, tmp_path / "copy")
    assert "bytes, over the limit of 1024: cs336_basics/nnn" in reason
    assert len(reason) < 200  # the path is quoted cut short
    copied = _copied(tmp_path / "copy")
    assert max(len(os.fsencode(relative)) for relative in copied) <= DEFAULT_LIMITS.path_bytes


def test_a_sparse_gigabyte_is_left_out_unread(submission: Path, tmp_path: Path):
    with (submission / "cs336_basics" / "weights.bin").open("wb") as f:
        f.truncate(1 << 30)  # a hole: no block on disk
    left_out = copy_submission(submission, tmp_path / "copy")
    assert [str(x) for x in left_out] == [
        "cs336_basics/weights.bin (1073741824 bytes, over the limit of 16 MiB for one file)"
    ]
    copied = _copied(tmp_path / "copy")
    assert "cs336_basics/weights.bin" not in copied
    assert "cs336_basics/__init__.py" in copied  # the code beside it is graded
    assert sum(s.st_size for s in copied.values()) < 1 << 20


def test_files_past_the_total_size_are_refused_before_they_are_written(
    submission: Path, tmp_path: Path
):
    # Each under the limit for one file, together over the total: sparse, so they cost no
    # disk here, and would cost their full size in the copy.
    for i in range(5):
        with (submission / "cs336_basics" / f"shard{i}.bin").open("wb") as f:
            f.truncate(1 << 20)
    limits = IntakeLimits(file_bytes=1 << 20, apparent_bytes=4 << 20)
    assert _refused(submission, tmp_path / "copy", limits) == "more than 4 MiB of files to copy"
    copied = _copied(tmp_path / "copy").values()
    assert sum(s.st_size for s in copied if stat.S_ISREG(s.st_mode)) <= limits.apparent_bytes


def test_files_past_the_total_disk_are_refused_before_they_are_written(
    submission: Path, tmp_path: Path
):
    # One-byte files: their apparent size is nothing, the block each takes is not.
    folder = submission / "cs336_basics" / "bits"
    folder.mkdir()
    for i in range(100):
        (folder / f"{i}.txt").write_bytes(b"x")
    block = (folder / "0.txt").stat().st_blocks * 512
    if block == 0:
        pytest.skip("this file system stores a one-byte file in no block")
    limits = IntakeLimits(allocated_bytes=50 * block)
    reason = _refused(submission, tmp_path / "copy", limits)
    assert reason.startswith("files taking more than") and reason.endswith("of disk")
    copied = _copied(tmp_path / "copy")
    files = [s for s in copied.values() if stat.S_ISREG(s.st_mode)]
    assert sum(s.st_blocks * 512 for s in files) <= limits.allocated_bytes
    assert len([r for r in copied if r.startswith("cs336_basics/bits/")]) < 50


def test_a_flood_of_small_files_is_refused_at_the_count_limit(submission: Path, tmp_path: Path):
    folder = submission / "cs336_basics" / "flood"
    folder.mkdir()
    for i in range(DEFAULT_LIMITS.files + 1):
        (folder / str(i)).touch()
    reason = _refused(submission, tmp_path / "copy")
    assert reason == f"more than {DEFAULT_LIMITS.files} files and folders"
    # The folder was refused while it was listed: nothing of it was copied.
    assert not (tmp_path / "copy" / "cs336_basics" / "flood").exists()


def test_the_count_limit_bounds_the_files_copied(submission: Path, tmp_path: Path):
    for folder in ("a", "b", "c"):
        (submission / "cs336_basics" / folder).mkdir()
        for i in range(40):
            (submission / "cs336_basics" / folder / f"{i}.py").touch()
    limits = IntakeLimits(files=100)
    assert _refused(submission, tmp_path / "copy", limits) == "more than 100 files and folders"
    assert len(_copied(tmp_path / "copy")) <= limits.files


@pytest.mark.parametrize("part", ["tests", "cs336_basics", "tests/adapters.py"])
def test_a_part_that_is_a_link_to_a_classmate_is_left_out(tmp_path: Path, part: str):
    classmate = synthetic.write_submission(tmp_path / "bob", synthetic.CORRECT)
    submission = synthetic.write_submission(tmp_path / "mallory", synthetic.NOT_IMPLEMENTED)
    link = submission / part
    shutil.rmtree(link) if link.is_dir() else link.unlink()
    link.symlink_to(classmate / part)
    left_out = copy_submission(submission, tmp_path / "copy")
    assert [str(x) for x in left_out] == [f"{part} ({LINK})"]
    copied = _copied(tmp_path / "copy")
    assert part not in copied and not any(r.startswith(f"{part}/") for r in copied)
    adapters = tmp_path / "copy" / "tests" / "adapters.py"
    assert not adapters.exists() or "del run_linear" in adapters.read_text()


def test_links_deeper_in_the_package_are_left_out(submission: Path, tmp_path: Path):
    package = submission / "cs336_basics"
    (package / "answers").symlink_to(tmp_path, target_is_directory=True)
    (package / "sub").mkdir()
    (package / "sub" / "model.py").symlink_to(package / "__init__.py")
    (package / "sub" / "dangling.py").symlink_to(tmp_path / "nowhere")
    left_out = copy_submission(submission, tmp_path / "copy")
    assert [str(x) for x in left_out] == [
        f"cs336_basics/answers ({LINK})",
        f"cs336_basics/sub/dangling.py ({LINK})",
        f"cs336_basics/sub/model.py ({LINK})",
    ]
    assert not any(stat.S_ISLNK(s.st_mode) for s in _copied(tmp_path / "copy").values())
    assert os.listdir(tmp_path / "copy" / "cs336_basics" / "sub") == []


def test_fifos_and_sockets_are_left_out_without_blocking(submission: Path, tmp_path: Path):
    package = submission / "cs336_basics"
    os.mkfifo(package / "pipe")  # opening it to read would wait for a writer forever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(package / "sock"))
    try:
        left_out = copy_submission(submission, tmp_path / "copy")
    finally:
        server.close()
    assert [str(x) for x in left_out] == [
        "cs336_basics/pipe (FIFO, not a regular file)",
        "cs336_basics/sock (socket, not a regular file)",
    ]


def test_an_entry_swapped_after_it_was_listed_is_not_followed(
    submission: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    package = submission / "cs336_basics"
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET = 1\n")
    listing = _Copy.listing

    def then_swap(self: _Copy, directory: int, relative: str):
        entries = listing(self, directory, relative)
        if relative == "cs336_basics":  # the walk has the listing; the author moves fast
            for name in ("silu.py", "softmax.py", "rope.py"):
                (package / name).unlink()
            (package / "silu.py").symlink_to(outside)
            os.link(outside, package / "softmax.py")  # a regular file, but not the one listed
            os.mkfifo(package / "rope.py")  # opening it to read would wait for a writer
        return entries

    monkeypatch.setattr(_Copy, "listing", then_swap)
    left_out = copy_submission(submission, tmp_path / "copy")
    assert [str(x) for x in left_out] == [
        "cs336_basics/rope.py (changed while it was copied)",
        f"cs336_basics/silu.py ({LINK})",
        "cs336_basics/softmax.py (changed while it was copied)",
    ]
    assert not {"rope.py", "silu.py", "softmax.py"} & set(
        os.listdir(tmp_path / "copy" / "cs336_basics")
    )


def test_names_that_are_not_utf8_are_copied_and_reported_as_text(submission: Path, tmp_path: Path):
    package = os.fsencode(submission / "cs336_basics")
    with open(package + b"/caf\xe9.py", "wb") as f:
        f.write(b"X = 1\n")
    os.symlink(b"/etc/passwd", package + b"/link\xff\n.py")
    [note] = copy_submission(submission, tmp_path / "copy")
    assert str(note) == f"cs336_basics/link\\xff\n.py ({LINK})"
    str(note).encode("utf-8")  # a report can write it
    assert os.path.exists(os.fsencode(tmp_path / "copy" / "cs336_basics") + b"/caf\xe9.py")


def test_a_submission_that_is_a_link_is_refused(submission: Path, tmp_path: Path):
    (tmp_path / "mallory").symlink_to(submission, target_is_directory=True)
    assert _refused(tmp_path / "mallory", tmp_path / "copy") == f"mallory: {LINK}"


def test_a_class_member_that_is_a_link_is_kept_unresolved(tmp_path: Path):
    synthetic.write_submission(tmp_path / "class" / "alice", synthetic.CORRECT)
    (tmp_path / "class" / "mallory").symlink_to("alice", target_is_directory=True)
    (tmp_path / "class" / "roster.txt").write_text("alice\nmallory\n")  # not a submission
    members = (tmp_path / "class").resolve()
    assert discover([tmp_path / "class"]) == [
        ("alice", members / "alice"),
        ("mallory", members / "mallory"),  # not members / "alice", as resolving would give
    ]


# -- one grading run ------------------------------------------------------------------


@pytest.fixture(scope="module")
def intake_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GradingRun]:
    """A correct control, `victim`, among hostile classmates, graded two at a time. Only two
    run tests (a grading takes half a minute): the victim, and `thief`, which links to the
    victim's tests and carries a sparse gigabyte; the intake refuses the others. Those sort
    first, so they are refused before any judge has collected the tests, as can happen."""
    root = tmp_path_factory.mktemp("intake")
    submissions = root / "class"
    synthetic.write_submission(submissions / "victim", synthetic.CORRECT)
    deep = synthetic.write_submission(submissions / "deep", synthetic.CORRECT)
    _nest(deep / "cs336_basics", "d", 1000)
    long_path = synthetic.write_submission(submissions / "long_path", synthetic.CORRECT)
    _nest(long_path / "cs336_basics", "n" * 255, 20)
    (submissions / "mallory").symlink_to("victim", target_is_directory=True)
    thief = synthetic.write_submission(submissions / "thief", synthetic.NOT_IMPLEMENTED)
    shutil.rmtree(thief / "tests")
    (thief / "tests").symlink_to("../victim/tests", target_is_directory=True)
    with (thief / "cs336_basics" / "weights.bin").open("wb") as f:
        f.truncate(1 << 30)
    (thief / "cs336_basics" / "x").mkdir()
    for i in range(25):
        os.mkfifo(thief / "cs336_basics" / "x" / f"pipe{i:02}")
    yield grade(
        submissions, "-j2", "--stored-inputs", f"--test-timeout={TEST_TIMEOUT}", out=root / "out"
    )
    _unnest(deep / "cs336_basics", "d")


def test_the_run_completes_with_a_report_for_everyone(intake_run: GradingRun):
    assert intake_run.returncode == 0, intake_run.stderr
    names = {"deep", "long_path", "mallory", "thief", "victim"}
    assert set(intake_run.summary()) == names
    # Those refused before the victim was graded have its tests, every one.
    tests = set(statuses(intake_run.results("victim")))
    assert all(set(statuses(intake_run.results(name))) == tests for name in names)


def test_the_control_keeps_every_point(intake_run: GradingRun):
    results = intake_run.results("victim")
    assert results["score"] == results["max_score"] > 0
    assert set(statuses(results).values()) == {"passed"}


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("deep", "not graded: folders nested more than 32 deep: cs336_basics/d/d/"),
        # cs336_basics (12 bytes), then names of 255 bytes and their slashes: the fourth is past.
        ("long_path", "not graded: a path of 1036 bytes, over the limit of 1024: cs336_basics/nn"),
        ("mallory", f"not graded: mallory: {LINK}"),
    ],
)
def test_a_refused_submission_errs_alone_with_the_reason(
    intake_run: GradingRun, name: str, reason: str
):
    results = intake_run.results(name)
    assert results["score"] == 0
    assert set(statuses(results).values()) == {"error"}
    assert all(t["output"].startswith(f"error: {reason}") for t in results["tests"])
    assert reason in results["output"]
    assert intake_run.summary()[name]["workers"] == "0"  # none of its code ran


def test_a_borrowed_tests_folder_earns_nothing_and_the_notes_say_why(intake_run: GradingRun):
    results = intake_run.results("thief")
    assert results["score"] == 0
    # Graded on its own package and no adapters, not on the victim's adapters.
    missing = "cannot import adapters: FileNotFoundError: no adapters file"
    assert set(statuses(results).values()) == {"error"}
    assert all(missing in t["output"] for t in results["tests"])
    # The notes open every report's output, passing or not.
    notes = [ln for ln in results["output"].splitlines() if ln.startswith("note: ")]
    notes = synthetic.notes_of_its_own(notes)
    assert [n.removeprefix("note: left out of the copy graded: ") for n in notes] == [
        f"tests ({LINK})",
        "cs336_basics/weights.bin (1073741824 bytes, over the limit of 16 MiB for one file)",
        *(f"cs336_basics/x/pipe{i:02} (FIFO, not a regular file)" for i in range(18)),
        "note: ... and 7 more paths left out of the copy",
    ]
