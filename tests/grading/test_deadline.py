"""`cs336-grade --deadline`: the reports are written before it, whatever a submission does;
a family that hangs costs its share of the time, and the tests it leaves are reported as
not run, with the reason (`recorder.FamilyTimeShares`)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from cs336_harness.grading.judge.recorder import FamilyTimeShares
from tests.grading import synthetic
from tests.grading.conftest import TEST_TIMEOUT, grade

HANGS_IN_TRAIN_BPE = synthetic.Synthetic(
    adapters_tail="""
    def run_train_bpe(*args, **kwargs):
        while True:
            pass
    """
)


def test_a_family_gets_a_share_of_what_is_left_and_no_more_than_the_first(
    monkeypatch: pytest.MonkeyPatch,
):
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    monkeypatch.setattr(time, "time", lambda: now[0])
    shares = FamilyTimeShares(deadline=1000.0 + 120)
    shares.collected(["a", "a", "b", "c", "c"])
    assert shares.begin(0, "a") and shares.cutoff == 1000 + 2 * 120 / 4  # 3 families left
    now[0] += 5  # "a" used 5 s of its 60
    assert not shares.begin(1, "a")
    assert shares.begin(2, "b") and shares.cutoff == 1005 + 60  # capped at the first's share
    now[0] = shares.cutoff  # "b" used all of it
    assert shares.begin(3, "c") and shares.cutoff == 1065 + 55  # the last: all that is left
    assert shares.reason == "the c tests used up their share of the time to grade (55 s)"


# The shares are of wall-clock time: on a busy host a correct family could use up its own.
@pytest.mark.alone
def test_a_hanging_family_costs_its_share_and_the_others_are_graded(tmp_path: Path):
    """The reports come before the deadline; train_bpe times out once, its other tests are
    not run, with the reason; every other family is graded as without the hang."""
    submission = synthetic.write_submission(tmp_path / "hangs", HANGS_IN_TRAIN_BPE)
    deadline = 150
    started = time.monotonic()
    run = grade(
        submission,
        "--seed=3",
        f"--deadline={deadline}",
        f"--test-timeout={TEST_TIMEOUT}",
        out=tmp_path / "out",
    )
    took = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    assert took < deadline
    tests = run.results()["tests"]
    bpe = [t for t in tests if t["extra_data"]["family"] == "train_bpe"]
    # A test or two time out (by the call's own limit, then the share's), the rest wait.
    statuses = [t["extra_data"]["status"] for t in bpe]
    timed_out = statuses.count("timed out")
    assert 1 <= timed_out <= 3 and set(statuses[timed_out:]) == {"error"}, statuses
    reason = "the train_bpe tests used up their share of the time to grade"
    assert reason in bpe[timed_out - 1]["output"], bpe[timed_out - 1]["output"]
    assert all(t["output"].startswith(f"error: not run: {reason}") for t in bpe[timed_out:])
    others = [t for t in tests if t["extra_data"]["family"] != "train_bpe"]
    assert [t["extra_data"]["nodeid"] for t in others if t["status"] != "passed"] == []
