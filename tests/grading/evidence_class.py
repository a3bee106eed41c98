"""A class built from the wrong modules of `tests/evidence/wrong/`, each mistake made by a
known number of submissions, for the class report's tests (`test_class_report.py`).

A wrong module is the correct adapters with one `run_*` replaced (`from tests.adapters
import *`, then its own `def`); as a submission it is the bundled implementation with the
module's code appended to its adapters (`synthetic.write_submission`), where the later
`def` wins. The module names the family that catches it (`CAUGHT_BY`) and the mistake its
failures are diagnosed as (`DIAGNOSED_AS`), or their error's shape (`ERROR_SHAPE`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic

WRONG = REPO_ROOT / "tests" / "evidence" / "wrong"
STAR_IMPORT = "from tests.adapters import *"

# Wrong module → how many submissions of the class make its mistake.
COPIES = {
    "softmax_no_max_shift": 3,
    "cross_entropy_one_hot_mean": 2,
    "schedule_warmup_off_by_one": 1,
    "linear_in_bfloat16": 1,
}
CORRECT = "correct"
# A submission named and raising as an attacker on the page would: its name and its
# exception's message are HTML that must show as text, never run. Its cross-entropy is off
# by a constant, which no known mistake is: its failures' messages quote the expected loss
# ("the output is 6.444 where 5.944 is expected"), which the report must not.
HOSTILE_NAME = "<img src=x onerror=alert(1)>"
HOSTILE_MESSAGE = "</pre><script>document.title='pwned'</script><b onclick=alert(2)>bold</b>"
HOSTILE = synthetic.Synthetic(
    adapters_tail=f"""
    def run_embedding(vocab_size, d_model, weights, token_ids):
        raise ValueError({HOSTILE_MESSAGE!r})

    _correct_cross_entropy = run_cross_entropy

    def run_cross_entropy(inputs, targets):
        return _correct_cross_entropy(inputs, targets) + 0.5
    """
)


@dataclass(frozen=True)
class Declared:
    """What a wrong module says about itself."""

    stem: str
    caught_by: frozenset[str]
    mistakes: frozenset[str]
    error_shape: frozenset[str]


def declared(stem: str) -> Declared:
    module = importlib.import_module(f"tests.evidence.wrong.{stem}")

    def as_set(name: str) -> frozenset[str]:
        value = getattr(module, name, frozenset())
        return frozenset({value}) if isinstance(value, str) else frozenset(value)

    return Declared(stem, module.CAUGHT_BY, as_set("DIAGNOSED_AS"), as_set("ERROR_SHAPE"))


def wrong_submission(stem: str) -> synthetic.Synthetic:
    source = (WRONG / f"{stem}.py").read_text()
    if STAR_IMPORT not in source:
        raise ValueError(f"{stem} is not written as the correct adapters with one part replaced")
    tail = "\n".join(line for line in source.splitlines() if not line.startswith(STAR_IMPORT))
    return synthetic.Synthetic(adapters_tail=tail)


def submission_names(stem: str) -> list[str]:
    return [f"{stem}_{i}" for i in range(1, COPIES[stem] + 1)]


def write_class(root: Path) -> dict[str, str]:
    """Every submission of the class under `root`; returns name → what it is (a wrong
    module's stem, "correct", or "hostile")."""
    made: dict[str, str] = {}
    for stem in COPIES:
        for name in submission_names(stem):
            synthetic.write_submission(root / name, wrong_submission(stem))
            made[name] = stem
    synthetic.write_submission(root / CORRECT, synthetic.CORRECT)
    made[CORRECT] = CORRECT
    synthetic.write_submission(root / HOSTILE_NAME, HOSTILE)
    made[HOSTILE_NAME] = "hostile"
    return made
