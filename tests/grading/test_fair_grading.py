"""Fair grading at class scale: no neighbour, no load and no memory trick takes a grade.

Each test grades hostile submissions beside correct controls, in one sandboxed run, and
checks that the controls keep every point, that the hostile ones gain nothing, and that the
kernel's own measure of each worker's memory stayed within the limit. The submissions are
in `synthetic.py`.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cs336_harness.grading.sandbox import cgroups
from cs336_harness.grading.sandbox.limits import parse_size
from tests.grading import synthetic
from tests.grading.conftest import TEST_TIMEOUT, GradingRun, grade, statuses

# The load tests' verdicts depend on a host otherwise quiet (the load is theirs): `make
# test-grading` runs them after the others, alone. The memory test's are the kernel's counts.
alone = pytest.mark.alone

# Made and removed at once: whether this host lets the grader make cgroups (root, as in CI).
_probe = cgroups.set_up(1, name=f"cs336-grade-probe-{os.getpid()}")
_probe.remove()
needs_cgroups = pytest.mark.skipif(not _probe.enabled, reason=_probe.unavailable)


def _archive(run: GradingRun) -> dict[str, dict]:
    data = json.loads((run.out / "grading.json").read_text())
    return {s["name"]: s for s in data["submissions"]}


def _full_marks(run: GradingRun, name: str) -> bool:
    results = run.results(name)
    return results["score"] == results["max_score"] > 0


def _write(root: Path, submissions: dict[str, synthetic.Synthetic]) -> Path:
    for name, submission in submissions.items():
        synthetic.write_submission(root / name, submission)
    return root


@alone
@needs_cgroups
def test_a_neighbour_that_keeps_the_host_busy_takes_no_grade(tmp_path: Path):
    """30 spinning processes in one lane; two correct submissions through the other, all
    of it on one CPU (the hardest case, and the same on any machine). Each control keeps
    every point on its first grading: no time-out, no regrade. (Without cgroups two lanes on
    one CPU are not isolated: the hog's 30 processes would take 30/31 of it.)"""
    controls = [f"correct_{i}" for i in range(2)]
    root = _write(
        tmp_path / "class",
        {"busy": synthetic.KEEPS_HOST_BUSY} | dict.fromkeys(controls, synthetic.CORRECT),
    )
    run = grade(
        root,
        "-j2",
        "--stored-inputs",
        f"--test-timeout={TEST_TIMEOUT}",
        out=tmp_path / "o",
        cpus={min(os.sched_getaffinity(0))},
    )
    assert run.returncode == 0, run.stderr
    archive = _archive(run)
    for name in controls:
        assert _full_marks(run, name), (name, run.results(name)["output"])
        assert synthetic.notes_of_its_own(archive[name]["notes"]) == [], name
    assert archive["correct_0"]["load"] or archive["correct_1"]["load"]


@alone
def test_eight_lanes_on_two_cores(tmp_path: Path):
    """More lanes than cores: every call is slower in wall-clock time, none uses more CPU."""
    names = [f"correct_{i}" for i in range(8)]
    root = _write(tmp_path / "class", dict.fromkeys(names, synthetic.CORRECT))
    run = grade(
        root, "-j8", "--stored-inputs", f"--test-timeout={TEST_TIMEOUT}", out=tmp_path / "o"
    )
    assert run.returncode == 0, run.stderr
    archive = _archive(run)
    for name in names:
        assert _full_marks(run, name), (name, run.results(name)["output"])
        assert synthetic.notes_of_its_own(archive[name]["notes"]) == [], name


MEMORY_LIMIT = "1G"
ESCAPES = {
    "shared_mapping": synthetic.SHARED_MAPPING,
    "memfd": synthetic.MEMFD,
    "sysv_shm": synthetic.SYSV_SHM,
    "children": synthetic.CHILDREN,
    "many_files": synthetic.MANY_FILES,
}


@needs_cgroups
def test_memory_held_past_the_limit_is_bounded_for_the_whole_worker(tmp_path: Path):
    """Shared mappings, memfds, System V segments, child processes and files in /tmp all
    count against one limit: each escape fails (0 points), the control keeps full marks,
    and no worker's cgroup ever held more than the limit."""
    root = _write(tmp_path / "class", ESCAPES | {"control": synthetic.CORRECT})
    run = grade(
        root,
        "-j2",
        "--stored-inputs",
        f"--test-timeout={TEST_TIMEOUT}",
        f"--memory-limit={MEMORY_LIMIT}",
        out=tmp_path / "o",
    )
    assert run.returncode == 0, run.stderr
    ET.parse(run.out / "junit.xml")  # every report is written, and parses
    assert "resources: cgroup v" in run.stdout
    assert _full_marks(run, "control")
    archive = _archive(run)
    limit = parse_size(MEMORY_LIMIT)
    assert 0 < archive["control"]["peak_memory"] <= limit
    for name in ESCAPES:
        results = run.results(name)
        assert results["score"] == 0, (name, results["output"])
        assert set(statuses(results).values()) == {"error"}, name
        assert archive[name]["peak_memory"] <= limit, name
        message = results["tests"][0]["output"]
        if name == "many_files":
            assert "files in /tmp, then: No space left on device" in message
        else:
            assert "passed the memory limit (1 GiB)" in message, (name, message)
