"""The sandbox's second tier, a user of its own without namespaces (`user_isolation`), as a
Docker container with default capabilities (Gradescope's) gets it: the attacks on the
verdict that the sandbox stops (the judge stops the others out of process, whatever the
tier), graded from an unpacked autograder whose oracle setup.sh closed to other users,
earn nothing, write nothing outside, and leave nothing running; correct submissions keep
every point. What only namespaces stop is asserted to happen (it connects out), so that the
docs' list of what this tier does not stop is checked too."""

from __future__ import annotations

import os
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic
from tests.grading.conftest import (
    MEMORY_LIMIT,
    SANDBOX_ATTACKS,
    TEST_TIMEOUT,
    GradingRun,
    Listener,
    family_statuses,
    grade,
    plant_links,
    statuses,
)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the user tier drops from root")

# Docker's default capability set (no CAP_SYS_ADMIN): bubblewrap's namespaces are refused.
DOCKER_CAPS = (
    "-all,+chown,+dac_override,+fsetid,+fowner,+mknod,+net_raw,+setgid,+setuid,+setfcap,"
    "+setpcap,+net_bind_service,+sys_chroot,+kill,+audit_write"
)


@dataclass
class Batch:
    run: GradingRun
    root: Path
    listener: Listener


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    root = tmp_path_factory.mktemp("user-tier")
    built = grade("autograder", out=root / "autograder.zip")
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(root / "autograder.zip") as archive:
        archive.extractall(root / "source")
    subprocess.run(["chmod", "-R", "o-rwx", root / "source" / "cs336_staff"], check=True)
    listener = Listener()
    submissions = root / "submissions"
    fixtures = REPO_ROOT / "tests" / "fixtures"
    # The attacks the sandbox stops: those the judge stops out of process are stopped the
    # same whatever the tier, and the bubblewrap batch and the unconfined run grade them.
    attacks = {
        "reads_fixtures": synthetic.reads_fixtures(fixtures),
        "kills_grader": synthetic.KILLS_GRADER,
        "outlives": synthetic.OUTLIVES,
        "writes_outside": synthetic.writes_outside(
            root / "canary.txt", fixtures, submissions / "writes_outside"
        ),
        "raids_neighbour": synthetic.raids_neighbour(submissions / "victim"),
        "phones_home": synthetic.phones_home(listener.port),
        "links": synthetic.LINKS,
    }
    assert set(attacks) == set(SANDBOX_ATTACKS)
    for name, submission in {**attacks, "victim": synthetic.CORRECT}.items():
        synthetic.write_submission(submissions / name, submission)
    plant_links(submissions / "links", fixtures)
    # The container's capabilities, so that the grader itself finds namespaces refused and
    # chooses the tier (no --sandbox option).
    run = grade(
        submissions,
        "-j2",
        "--all-or-nothing",  # as the hostile batch: an attack costs its families' points
        f"--test-timeout={TEST_TIMEOUT}",
        f"--memory-limit={MEMORY_LIMIT}",
        out=root / "out",
        cwd=root / "source",
        prefix=("setpriv", f"--bounding-set={DOCKER_CAPS}", "--inh-caps=-all"),
    )
    return Batch(run, root, listener)


def test_the_tier_is_chosen_where_namespaces_are_refused_and_named(batch: Batch):
    assert batch.run.returncode == 0, batch.run.stderr
    assert "refuses a mount namespace" in batch.run.stderr
    assert {row["sandbox"] for row in batch.run.summary().values()} == {
        "user isolation (namespaces refused here): a user id of its own, without namespaces "
        "(no network isolation)"
    }


def test_a_correct_submission_keeps_every_point(batch: Batch):
    results = batch.run.results("victim")
    assert results["score"] == results["max_score"]
    assert set(statuses(results).values()) == {"passed"}


# What the docs list as needing namespaces (docs/grading.md, the tiers' table).
NEEDS_NAMESPACES = ("phones_home",)


@pytest.mark.parametrize("name", [a for a in SANDBOX_ATTACKS if a not in NEEDS_NAMESPACES])
def test_an_attack_earns_nothing_for_what_it_attacks(batch: Batch, name: str):
    results = batch.run.results(name)
    assert family_statuses(results, "softmax") - {"passed"}, name
    assert results["max_score"] - results["score"] == 1
    assert all(
        t["extra_data"]["status"] == "passed"
        for t in results["tests"]
        if t["extra_data"]["family"] != "softmax"
    )


def test_nothing_outside_was_written_and_nothing_outlives_it(batch: Batch):
    assert not batch.root.joinpath("canary.txt").exists()
    submissions = batch.root / "submissions"
    assert not (submissions / "writes_outside" / "cs336_basics" / "written.txt").exists()
    assert "sabotaged" not in (submissions / "victim" / "tests" / "adapters.py").read_text()
    leftovers = [
        path.parent.name
        for path in Path("/proc").glob("[0-9]*/cmdline")
        if synthetic.ORPHAN_MARKER.encode() in _read(path)
    ]
    assert leftovers == []


def test_what_only_namespaces_stop_still_happens(batch: Batch):
    # No network namespace: it reached a helper on the grader's loopback, which answered.
    assert batch.listener.accepted > 0
    results = batch.run.results("phones_home")
    assert results["score"] == results["max_score"]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # a process that ended while we looked
        return b""
