"""An adapter that blocks on every call costs its own family, not the rest of the submission's
time: after `GIVE_UP_AFTER` of its calls in a row ran out of time, its other calls are not
made (a real solution's BPE pool, deadlocked, once spent the whole time limit on 24 calls
and lost the Transformer families graded after it)."""

from __future__ import annotations

from pathlib import Path

from cs336_harness.grading.judge.remote import GIVE_UP_AFTER
from cs336_harness.grading.results import HARDENING
from cs336_harness.grading.sandbox.limits import Limits
from tests.grading import synthetic
from tests.grading.conftest import grade

# One second of CPU per call: its wall-clock cap is then 11 s.
TIMEOUT = 1
CALL_WALL = Limits(test_timeout=TIMEOUT).call_wall
BLOCKS_IN_BPE = synthetic.Synthetic(
    adapters_tail="""
    import threading


    def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
        threading.Event().wait()
    """
)


def test_a_blocked_adapter_is_given_up_after_its_calls_in_a_row_ran_out(tmp_path: Path):
    synthetic.write_submission(tmp_path / "blocks", BLOCKS_IN_BPE)
    run = grade(tmp_path / "blocks", "--stored-inputs", f"--test-timeout={TIMEOUT}",
                out=tmp_path / "out")  # fmt: skip
    assert run.returncode == 0, run.stderr
    tests = run.results()["tests"]
    bpe = [t for t in tests if "test_train_bpe.py" in t["extra_data"]["nodeid"]]
    waited = [
        t for t in bpe if f"no answer within {CALL_WALL:g} s of wall-clock time" in t["output"]
    ]
    not_made = [t for t in bpe if "this call was not made" in t["output"]]
    assert len(waited) == GIVE_UP_AFTER, [t["output"] for t in bpe]
    assert len(not_made) > GIVE_UP_AFTER and len(waited) + len(not_made) == len(bpe)
    assert {t["extra_data"]["status"] for t in bpe} == {"timed out"}
    assert f"last {GIVE_UP_AFTER} calls ran out of time one after another" in not_made[0]["output"]
    # Every other family keeps its points; the blocked calls cost three caps, not one each
    # (which alone would take longer than this whole grading).
    others = [t for t in tests if t not in bpe and t["extra_data"]["kind"] != HARDENING]
    assert others and {t["extra_data"]["status"] for t in others} == {"passed"}
    graded = run.graded()
    assert graded["wall_time"] < len(bpe) * CALL_WALL, graded["wall_time"]
