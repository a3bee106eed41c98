"""The sandbox's second tier, a user of its own without namespaces (`user_tier`), as a
Docker container with default capabilities (Gradescope's) gets it: the attacks on the
verdict that the sandbox stops (the judge stops the others out of process, whatever the
tier), graded from an unpacked autograder whose oracle setup.sh closed to other users,
earn nothing, write nothing outside, and leave nothing running; correct submissions keep
every point. The tier's own: a send over the network reaches nothing (a seccomp filter), a
fill of the shared temp folders is stopped and everything left there removed, so a later
submission finds nothing, and a submission that shows its inputs in its failure messages
shows two students different ones."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from cs336_harness.paths import REPO_ROOT
from tests.evidence.degenerate._answers import KINDS
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


# Attacks on the host's shared temp folders, graded in the batch and after it.
TIER_ATTACKS = ("leaves_files",)


@dataclass
class Batch:
    run: GradingRun
    root: Path
    listener: Listener
    # Graded after the batch, with credit per case: a submission looking for what the
    # batch's left behind, and those that compute nothing.
    later: GradingRun
    # Two students' copies of one submission that shows its inputs, graded per student.
    twins: GradingRun
    # What of the attacks' files was still in the shared temp folders at the end.
    leftovers: list[str]


def _grade(submissions: Path, out: Path, source: Path, *args: str) -> GradingRun:
    """Graded as the autograder's container would: with its capabilities, the grader finds
    namespaces refused and chooses the tier itself (no --sandbox option)."""
    return grade(
        submissions,
        f"--test-timeout={TEST_TIMEOUT}",
        f"--memory-limit={MEMORY_LIMIT}",
        *args,
        out=out,
        cwd=source,
        prefix=("setpriv", f"--bounding-set={DOCKER_CAPS}", "--inh-caps=-all"),
    )


def _leftovers() -> list[str]:
    return sorted(
        str(path)
        for folder in synthetic.SHARED_TEMP
        for path in Path(folder).glob(f"{synthetic.LEFTOVER}*")
    )


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
    attacks["leaves_files"] = synthetic.LEAVES_FILES
    for name, submission in {**attacks, "victim": synthetic.CORRECT}.items():
        synthetic.write_submission(submissions / name, submission)
    plant_links(submissions / "links", fixtures)
    source = root / "source"
    # As the hostile batch: an attack costs its families' points.
    # One fresh draw for the batch and the submissions graded after it: the second run
    # draws the same inputs again and finds their known mistakes' table in the cache.
    seed = f"--seed={random.randrange(1 << 31)}"
    run = _grade(submissions, root / "out", source, "-j2", "--all-or-nothing", seed)
    synthetic.write_submission(root / "later" / "reads_leftovers", synthetic.READS_LEFTOVERS)
    for kind in KINDS:
        synthetic.write_submission(root / "later" / kind, synthetic.computes_nothing(kind))
    later = _grade(root / "later", root / "later-out", source, "-j2", "--partial", seed)
    for student in ("alice", "bob"):
        synthetic.write_submission(root / "twins" / student, synthetic.REPORTS_INPUTS)
    args = ("-j2", "--per-student", "--all-or-nothing")
    twins = _grade(root / "twins", root / "twins-out", source, *args)
    return Batch(run, root, listener, later, twins, _leftovers())


def test_the_tier_is_chosen_where_namespaces_are_refused_and_named(batch: Batch):
    assert batch.run.returncode == 0, batch.run.stderr
    assert "refuses a mount namespace" in batch.run.stderr
    assert {row["sandbox"] for row in batch.run.summary().values()} == {
        "user isolation (namespaces refused here): a user id of its own, without namespaces; "
        "no socket but Unix ones (a seccomp filter)"
    }


def test_a_correct_submission_keeps_every_point(batch: Batch):
    results = batch.run.results("victim")
    assert results["score"] == results["max_score"]
    assert set(statuses(results).values()) == {"passed"}


@pytest.mark.parametrize("name", [*SANDBOX_ATTACKS, *TIER_ATTACKS])
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


def test_a_send_over_the_network_reaches_nothing(batch: Batch):
    """No network namespace, but no socket but a Unix one: the helper on the grader's
    loopback was never reached."""
    assert batch.listener.accepted == 0


def test_a_fill_of_the_shared_temp_folders_is_stopped_and_nothing_is_left(batch: Batch):
    softmax = [
        t["output"]
        for t in batch.run.results("leaves_files")["tests"]
        if t["extra_data"]["family"] == "softmax" and t["status"] == "failed"
    ]
    assert "shared temp folders" in softmax[0] and "past the limit of 4096 files" in softmax[0]
    assert batch.leftovers == []
    # Graded after the batch, another submission finds nothing of what it left.
    later = batch.later.results("reads_leftovers")
    assert batch.later.returncode == 0, batch.later.stderr
    assert family_statuses(later, "softmax") == {"failed"}
    assert later["max_score"] - later["score"] == 1


@pytest.mark.parametrize("kind", KINDS)
def test_a_submission_that_computes_nothing_scores_nothing(batch: Batch, kind: str):
    """With credit per case, where a test such a submission passes (clipping under the
    limit, AdamW's resume, ...) earns only beside one that tells it apart."""
    assert batch.later.returncode == 0, batch.later.stderr
    results = batch.later.results(kind)
    assert results["score"] == 0, {t["name"]: t["score"] for t in results["tests"] if t["score"]}


def test_two_students_are_shown_different_inputs(batch: Batch):
    """A submission that shows a fingerprint of every softmax input in its failure message,
    graded for two students: no fingerprint is in both."""
    assert batch.twins.returncode == 0, batch.twins.stderr
    pattern = rf"{synthetic.FINGERPRINT} ([0-9a-f]{{16}})"
    shown = {
        student: set(re.findall(pattern, json.dumps(batch.twins.results(student))))
        for student in ("alice", "bob")
    }
    assert shown["alice"] and shown["bob"] and not shown["alice"] & shown["bob"]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # a process that ended while we looked
        return b""
