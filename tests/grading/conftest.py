"""Run the grader as its users do, `python -m cs336_harness.grading ...`, and read its reports."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

from cs336_harness.grading.cli import COMMANDS
from cs336_harness.grading.sandbox import cgroups
from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic
from tests.grading.real_world import (
    MISFITS,
    write_upstream_shapes,
    write_upstream_shapes_without_residual,
    write_wrong_package,
)

# A call's CPU limit in the grader's tests. Its wall-clock cap, 18 s, is the margin of the
# tests that grade beside load (eight lanes on two cores, a busy neighbour).
TEST_TIMEOUT = 8
# The hostile batch's, where hangs cost it: each of its loops in Python costs this, and
# must get this much CPU within the call's wall-clock cap (`Limits.call_wall`), a quarter
# of a core, or is graded again alone. A correct call takes under 0.5 s of CPU (graded at
# --test-timeout=0.5 with the host's load at 19, 2026-11-27).
HANG_TIMEOUT = 3
MEMORY_LIMIT = "2G"
FAIL_UNDER = 50
# The files of `make test-grading-together` that take longest, longest first (seconds with
# --durations on the 2-core CI machine, 2026-11-28). pytest-xdist hands out files in the
# order collected (`--no-loadscope-reorder`; by default it hands out those of the most tests
# first), and a long file handed out last runs alone at the end while the other worker
# idles. The files not named keep their order, after these.
LONGEST_FIRST = (
    "test_user_tier.py",  # 183
    "test_autograder.py",  # 105
    "test_shards.py",  # 91
    "test_handout.py",  # 72
    "test_class_report.py",  # 68
    "test_correct_implementations.py",  # 58, with test_real_world.py's batch
    "test_fresh_inputs.py",  # 51
    "test_blocked_adapter.py",  # 47, 33 of them waiting
    "test_import_path.py",  # 48
    "test_attacks_work_unconfined.py",  # 48
    "test_student_inputs.py",  # 46
)


# The files CI leaves to `make test-grading` (marked `extended`): the grader's tests outgrew
# CI's 15 minutes on two cores (1,500 s of tests over 2 workers, 2026-11-28), most of it a
# grading per submission (a worker, torch, AdamW's torch._dynamo). CI keeps what every
# landing must hold: the correct implementations' full marks, the autograder (per-student
# inputs included), fresh inputs, the class report, upstream-shaped code, the hostile batch under
# bubblewrap and the busy neighbour (docs/maintaining.md, "CI").
BEYOND_CI = (
    "test_user_tier.py",
    "test_shards.py",
    "test_handout.py",
    "test_import_path.py",
    "test_blocked_adapter.py",
    "test_attacks_work_unconfined.py",
    "test_courses.py",
    "test_archives.py",
    "test_untrusted_text.py",
    "test_intake.py",
    "test_student_inputs.py",  # per-student inputs: test_autograder.py's run keeps them in CI
)
# And single tests of files CI keeps: two of the alone tests (a quiet host's minutes, one at a
# time), where the busy neighbour's keeps load's fairness in CI.
BEYOND_CI_TESTS = (
    "test_eight_lanes_on_two_cores",
    "test_a_hanging_family_costs_its_share_and_the_others_are_graded",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__)
    named = LONGEST_FIRST + BEYOND_CI
    if missing := [name for name in named if not here.with_name(name).is_file()]:
        raise pytest.UsageError(f"conftest.py names files tests/grading does not have: {missing}")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
    for item in items:
        if item.path.name in BEYOND_CI or getattr(item, "originalname", "") in BEYOND_CI_TESTS:
            item.add_marker("extended")


@dataclass
class GradingRun:
    returncode: int
    stdout: str
    stderr: str
    out: Path

    def results(self, name: str | None = None) -> dict[str, Any]:
        path = self.out / name / "results.json" if name else self.out / "results.json"
        return json.loads(path.read_text())

    def graded(self, name: str | None = None) -> dict[str, Any]:
        """A submission's record in grading.json (its output, wall time, ...); None: the
        one submission of the run."""
        records = json.loads((self.out / "grading.json").read_text())["submissions"]
        if name is None:
            (record,) = records
            return record
        (record,) = (r for r in records if r["name"] == name)
        return record

    def summary(self) -> dict[str, dict[str, str]]:
        with (self.out / "summary.csv").open() as f:
            return {row["submission"]: row for row in csv.DictReader(f)}

    def junit(self) -> ET.Element:
        return ET.parse(self.out / "junit.xml").getroot()


# The grader's options that choose the inputs. A grading given none draws new ones, which
# costs a draw (the oracle's outputs and the known mistakes' table: about 9 s of CPU here);
# the tests' gradings share one draw a session instead (`session_inputs`), unless they test
# that default (`draw=True`).
INPUT_OPTIONS = ("--seed", "--fresh-inputs", "--stored-inputs", "--drawn-inputs", "--per-student")


def grade(
    *args: str | Path,
    out: Path,
    cwd: Path = REPO_ROOT,
    env: dict[str, str] | None = None,
    cpus: set[int] | None = None,
    python_flags: tuple[str, ...] = (),
    prefix: tuple[str, ...] = (),
    draw: bool = False,
) -> GradingRun:
    """Run the grader; `cpus`: the only CPUs it and everything it starts may use;
    `python_flags`: the interpreter's own options, before `-m`; `prefix`: a command that
    runs it (`setpriv ...`); `draw`: a grading of submissions that names no inputs draws
    its own, as the grader does by default (else it grades on the session's draw)."""
    command = [*prefix, sys.executable, *python_flags, "-m", "cs336_harness.grading"]
    command += [*map(str, args), "--out", str(out)]
    if not draw and _draws_by_default([str(a) for a in args]):
        command += ["--drawn-inputs", str(session_inputs())]
    done = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
    )
    return GradingRun(done.returncode, done.stdout, done.stderr, out)


def _draws_by_default(args: list[str]) -> bool:
    """Whether a grading with `args` would draw inputs of its own: it grades submissions
    (no subcommand; with none named it checks the bundled implementation on the stored
    fixtures) and names no inputs."""
    if args and args[0] in COMMANDS:
        return False
    named = [a for a in args if not a.startswith("-")]
    return bool(named) and not any(a.split("=")[0] in INPUT_OPTIONS for a in args)


# Where the session's inputs are drawn (`_session_folder`, an autouse fixture, sets it).
_SESSION: dict[str, Path] = {}


@pytest.fixture(scope="session", autouse=True)
def _session_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.getbasetemp()
    # Under xdist each worker has a folder of its own; their parent is the session's.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    _SESSION["inputs"] = shared / "session-inputs"


def session_inputs() -> Path:
    """Inputs drawn once for the whole test session (`cs336-grade draw`, a seed of its own),
    shared by xdist's workers under a file lock: fresh in every session, as a class's are,
    at one draw's cost."""
    folder = _SESSION["inputs"]
    with FileLock(f"{folder}.lock"):
        if not (folder / "seed").is_file():
            seed = str(random.randrange(1 << 31))
            done = subprocess.run(
                [sys.executable, "-m", "cs336_harness.grading", "draw", "--seed", seed,
                 "--out", str(folder)],
                cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
    return folder


def once_per_session(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], GradingRun]
) -> GradingRun:
    """`make(folder)` once for the whole test session, even when pytest-xdist spreads the
    files that read it over several workers (`make test-grading-together`): the first worker
    makes it under a file lock, in a folder all of them share, and the others read its
    outcome back (xdist's own advice for a session fixture's single execution)."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return make(tmp_path_factory.mktemp(name))
    folder = tmp_path_factory.getbasetemp().parent / name
    saved = folder / "grading-run.json"
    with FileLock(f"{folder}.lock"):
        if saved.exists():
            fields = json.loads(saved.read_text())
            return GradingRun(**fields | {"out": Path(fields["out"])})
        folder.mkdir()
        run = make(folder)
        saved.write_text(json.dumps(dataclasses.asdict(run) | {"out": str(run.out)}))
        return run


def without_bwrap(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH has everything but bwrap."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bwrap = shutil.which("bwrap")
    for directory in os.environ["PATH"].split(os.pathsep):
        for tool in Path(directory).glob("*") if Path(directory).is_dir() else []:
            target = bin_dir / tool.name
            if str(tool) != bwrap and tool.name != "bwrap" and not target.exists():
                target.symlink_to(tool)
    return os.environ | {"PATH": str(bin_dir)}


def statuses(results: dict[str, Any]) -> dict[str, str]:
    """Node id → the grader's verdict, from a results.json."""
    return {t["extra_data"]["nodeid"]: t["extra_data"]["status"] for t in results["tests"]}


def family_statuses(results: dict[str, Any], family: str) -> set[str]:
    return {
        t["extra_data"]["status"] for t in results["tests"] if t["extra_data"]["family"] == family
    }


# Submissions that misbehave against their own grade: crashes, hangs, limits.
MISBEHAVING = {
    "correct": synthetic.CORRECT,
    "wrong_softmax": synthetic.WRONG_SOFTMAX,
    "wrong_lm_ffn": synthetic.WRONG_LM_FFN,
    "not_implemented": synthetic.NOT_IMPLEMENTED,
    "hangs": synthetic.HANGS,
    "crashes": synthetic.CRASHES,
    "exit_at_import": synthetic.EXIT_AT_IMPORT,
    "hangs_at_import": synthetic.HANGS_AT_IMPORT,
    "hard_exit_at_import": synthetic.HARD_EXIT_AT_IMPORT,
    "import_error": synthetic.IMPORT_ERROR,
    "syntax_error": synthetic.SYNTAX_ERROR,
    "loud": synthetic.LOUD,
    "memory_hog": synthetic.MEMORY_HOG,
    "cheats": synthetic.CHEATS,
}
# Attacks on the verdict: each is wrong in softmax and tries to get its point anyway.
# Those the judge stops out of process, whatever confines the worker (docs/grading.md, the
# first row of the tiers' table), ...
JUDGE_ATTACKS = (
    "patches_comparison",
    "patches_pytest",
    "reads_caller",
    "forges_records",
    "lying_values",
    "huge_reply",
)
# ... and those the sandbox stops, each tier its own way.
SANDBOX_ATTACKS = (
    "reads_fixtures",
    "kills_grader",
    "outlives",
    "writes_outside",
    "raids_neighbour",
    "phones_home",
    "links",
)
ATTACKS = JUDGE_ATTACKS + SANDBOX_ATTACKS
HOSTILE = [*MISBEHAVING, *ATTACKS, "victim"]


class Listener:
    """A TCP server on the grader's loopback that counts the connections it accepts."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()


@dataclass
class HostileBatch:
    run: GradingRun
    root: Path
    listener: Listener

    @property
    def canary(self) -> Path:
        return self.root / "canary.txt"


def write_hostile(root: Path, listener: Listener) -> None:
    submissions = root / "submissions"
    fixtures = REPO_ROOT / "tests" / "fixtures"
    attacks = {
        "patches_comparison": synthetic.PATCHES_COMPARISON,
        "patches_pytest": synthetic.PATCHES_PYTEST,
        "reads_fixtures": synthetic.reads_fixtures(fixtures),
        "reads_caller": synthetic.READS_CALLER,
        "forges_records": synthetic.FORGES_RECORDS,
        "lying_values": synthetic.LYING_VALUES,
        "kills_grader": synthetic.KILLS_GRADER,
        "outlives": synthetic.OUTLIVES,
        "writes_outside": synthetic.writes_outside(
            root / "canary.txt", fixtures, submissions / "writes_outside"
        ),
        "raids_neighbour": synthetic.raids_neighbour(submissions / "victim"),
        "phones_home": synthetic.phones_home(listener.port),
        "huge_reply": synthetic.HUGE_REPLY,
        "links": synthetic.LINKS,
        "victim": synthetic.CORRECT,
    }
    for name, submission in (MISBEHAVING | attacks).items():
        synthetic.write_submission(submissions / name, submission)
    plant_links(submissions / "links", fixtures)


def plant_links(submission: Path, fixtures: Path) -> None:
    """The `links` attack's link to the stored fixtures, and a FIFO beside it (which would
    block a naive copy), in its package."""
    package = submission / "cs336_basics"
    (package / "answers").symlink_to(fixtures, target_is_directory=True)
    os.mkfifo(package / "pipe")


@pytest.fixture(scope="session")
def hostile_batch(tmp_path_factory: pytest.TempPathFactory) -> HostileBatch:
    """Every synthetic submission graded in one run, two at a time, on the stored fixtures
    (so that an attack reading them could succeed, were the sandbox not there)."""
    root = tmp_path_factory.mktemp("hostile")
    listener = Listener()
    write_hostile(root, listener)
    run = grade(
        root / "submissions",
        "-j2",
        "--stored-inputs",  # the attacks that read the stored fixtures need them to exist
        # A family's points whole or not at all: each attack's cost is its families' points.
        "--all-or-nothing",
        f"--test-timeout={HANG_TIMEOUT}",
        f"--memory-limit={MEMORY_LIMIT}",
        f"--fail-under={FAIL_UNDER}",
        out=root / "out",
    )
    return HostileBatch(run, root, listener)


UPSTREAM_STYLE = REPO_ROOT / "tests" / "evidence" / "upstream_style"


def _lane_cpus(lanes: int) -> tuple[int, ...]:
    """What a worker's os.cpu_count() may say in a run of `lanes` lanes on this host: with
    cgroups each lane has a share by weight, without them the CPUs it is pinned to."""
    groups = cgroups.set_up(1)
    weighted = groups.enabled
    groups.remove()
    return tuple({cgroups.lane_cpu_count(lane, lanes, weighted) for lane in range(lanes)})


@pytest.fixture(scope="session")
def correct_batch(tmp_path_factory: pytest.TempPathFactory) -> GradingRun:
    """One grading run, on a fresh draw, two at a time, of correct submissions in several
    styles (`test_correct_implementations.py`) and of real students' shapes
    (`test_real_world.py`): the bundled implementation (`from_scratch`, everyone's control),
    fused ops, an upstream-style one, one hiding a forbidden call, one written against
    upstream's calls alone (`upstream_shapes`), the same with upstream's adapters alone and
    its block missing a residual (`upstream_shapes_no_residual`) and a small one whose own
    package is wrong in softmax (`wrong_package`)."""
    return once_per_session(tmp_path_factory, "correct", _grade_correct_batch)


def _grade_correct_batch(folder: Path) -> GradingRun:
    root = folder / "submissions"
    synthetic.write_submission(root / "from_scratch", synthetic.CORRECT)
    (root / "fused" / "tests").mkdir(parents=True)
    shutil.copyfile(REPO_ROOT / "tests" / "evidence" / "fused.py", root / "fused/tests/adapters.py")
    shutil.copytree(UPSTREAM_STYLE, root / "upstream_style")
    synthetic.write_submission(root / "hides", synthetic.HIDES_A_FORBIDDEN_CALL)
    write_upstream_shapes(root / "upstream_shapes", _lane_cpus(2))
    write_upstream_shapes_without_residual(root / "upstream_shapes_no_residual", _lane_cpus(2))
    write_wrong_package(root / "wrong_package", "lazy")
    synthetic.write_submission(root / "misfits", MISFITS)
    return grade(root, "-j2", out=root.parent / "out")
