"""The attacks of `test_hostile_submissions` are real: without the protection each one
defeats, it earns the point it is after. So a pass there means the protection held, not
that the attack was broken."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic
from tests.grading.conftest import GradingRun, Listener, grade

FIXTURES = REPO_ROOT / "tests" / "fixtures"


@pytest.mark.parametrize(
    "attack",
    [synthetic.PATCHES_COMPARISON, synthetic.PATCHES_PYTEST, synthetic.READS_CALLER, "links"],
)
def test_in_process_the_attacks_on_the_judge_pass(tmp_path: Path, attack):
    if attack == "links":  # read through a link in its package, which the grader's copy drops
        submission = synthetic.write_submission(tmp_path / "s", synthetic.LINKS)
        (submission / "cs336_basics" / "answers").symlink_to(FIXTURES, target_is_directory=True)
    else:
        submission = synthetic.write_submission(tmp_path / "s", attack)
    adapters = submission / "tests" / "adapters.py"
    # The forward tests: these attacks fake outputs, not the gradients the backward test asks
    # for through autograd.
    command = [sys.executable, "-m", "pytest", "tests/families/test_softmax.py", "-q", "-p",
               "no:cacheprovider", "-k", "not backward", f"--adapters={adapters}"]  # fmt: skip
    done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.fixture(scope="module")
def unconfined(tmp_path_factory: pytest.TempPathFactory) -> tuple[GradingRun, Path, Listener]:
    root = tmp_path_factory.mktemp("unconfined")
    submissions, listener = root / "submissions", Listener()
    attacks = {
        "reads_fixtures": synthetic.reads_fixtures(FIXTURES),
        "writes_outside": synthetic.writes_outside(
            root / "canary.txt", root / "no-fixtures", submissions / "writes_outside"
        ),
        "raids_neighbour": synthetic.raids_neighbour(submissions / "victim"),
        "phones_home": synthetic.phones_home(listener.port),
        "victim": synthetic.CORRECT,
    }
    for name, attack in attacks.items():
        synthetic.write_submission(submissions / name, attack)
    run = grade(submissions, "-j2", "--no-sandbox", "--stored-inputs", out=root / "out")
    return run, root, listener


@pytest.mark.parametrize("name", ["reads_fixtures", "raids_neighbour", "phones_home"])
def test_without_the_sandbox_the_attacks_on_the_host_score(unconfined, name: str):
    run, _, _ = unconfined
    # The forward tests: stolen or stored outputs carry no gradient for the backward test.
    forward = {
        t["extra_data"]["status"]
        for t in run.results(name)["tests"]
        if t["extra_data"]["family"] == "softmax" and "backward" not in t["extra_data"]["nodeid"]
    }
    assert forward == {"passed"}


def test_without_the_sandbox_the_host_is_written_and_reached(unconfined):
    run, root, listener = unconfined
    assert (root / "canary.txt").exists()
    victim = (root / "submissions" / "victim" / "tests" / "adapters.py").read_text()
    assert "sabotaged" in victim
    assert listener.accepted > 0
    assert run.summary()["writes_outside"]["sandbox"].startswith("none (--no-sandbox)")
