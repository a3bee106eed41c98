"""A class built from the wrong modules of `tests/evidence/wrong/`, each mistake made by a
known number of submissions, for the class report's tests (`test_class_report.py`).

A wrong module is the correct adapters with some `run_*` replaced (`from tests.adapters
import *`, then its own `def`s); as a submission it is the bundled implementation with the
module's code appended to its adapters (`synthetic.write_submission`), where the later
`def` wins. The module names the families that catch it (`CAUGHT_BY`) and the mistake its
failures are diagnosed as (`DIAGNOSED_AS`), or their error's shape (`ERROR_SHAPE`). Several
make their mistake in a component that others are built on, and so in those too.

Each module is graded once (`write_class`); the class of several students per mistake
(`COPIES`) is made of copies of its results under other names (`copied_class`), as grading
the same code again would give them.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from cs336_harness.grading.results import SubmissionResult
from cs336_harness.grading.scoring import Score, load_rubric, score
from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic

WRONG = REPO_ROOT / "tests" / "evidence" / "wrong"
STAR_IMPORT = "from tests.adapters import *"
# The wrong modules' helpers they import: `_component_mistakes` and the like.
HELPER = re.compile(r"^from tests\.evidence\.wrong\.(_\w+) import", re.MULTILINE)

# Wrong module → how many submissions of the class make its mistake: the mistakes of a class
# of 23 graded for issue 48 (RMSNorm's eps, RoPE turned the wrong way, SwiGLU's branches
# swapped, Linear untransposed, attention unscaled, softmax unshifted, each but the last in
# a component that others are built on), and one no known mistake names (its error's
# shape). Nine gradings in all, with the correct and the hostile submissions.
COPIES = {
    "rmsnorm_eps_ignored_1e_6": 5,
    "rope_rotation_reversed": 4,
    "swiglu_w1_w3_swapped_everywhere": 3,
    "linear_no_transpose": 2,
    "attention_unscaled_everywhere": 2,
    "softmax_no_max_shift": 1,
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


def _as_submission(source: str) -> str:
    """A wrong module's (or its helper's) source as it runs in a submission, where
    `tests.adapters` is the submission's own adapters: the correct ones it builds on are
    `tests/correct_adapters.py` there, and its helpers sit beside them (the grader copies
    the Python files directly in `tests/`)."""
    correct = "from tests import correct_adapters as adapters"
    source = source.replace("from tests import adapters", correct)
    return HELPER.sub(r"from tests.\1 import", source)


def wrong_submission(stem: str) -> synthetic.Synthetic:
    """The bundled implementation with the wrong module's code appended to its adapters, and
    the helpers it imports (`tests/evidence/wrong/_*.py`) beside them."""
    source = (WRONG / f"{stem}.py").read_text()
    if STAR_IMPORT not in source:
        raise ValueError(f"{stem} is not written as the correct adapters with parts replaced")
    lines = _as_submission(source).splitlines()
    tail = "\n".join(line for line in lines if not line.startswith(STAR_IMPORT))
    files = {"tests/correct_adapters.py": (REPO_ROOT / "tests" / "adapters.py").read_text()}
    for helper in HELPER.findall(source):
        files[f"tests/{helper}.py"] = _as_submission((WRONG / f"{helper}.py").read_text())
    return synthetic.Synthetic(adapters_tail=tail, files=files)


def submission_names(stem: str) -> list[str]:
    return [f"{stem}_{i}" for i in range(1, COPIES[stem] + 1)]


def write_class(root: Path) -> dict[str, str]:
    """One submission per wrong module (named by its stem), the correct one and the hostile
    one, under `root`; returns name → what it is (a wrong module's stem, "correct", or
    "hostile")."""
    made: dict[str, str] = {}
    for stem in COPIES:
        synthetic.write_submission(root / stem, wrong_submission(stem))
        made[stem] = stem
    synthetic.write_submission(root / CORRECT, synthetic.CORRECT)
    made[CORRECT] = CORRECT
    synthetic.write_submission(root / HOSTILE_NAME, HOSTILE)
    made[HOSTILE_NAME] = "hostile"
    return made


def copied_class(results: list[SubmissionResult]) -> list[Score]:
    """The class of `COPIES` from the results of grading each module once: the copies of a
    module's results under its submissions' names, then the others as they are."""
    rubric = load_rubric()
    by_name = {r.name: r for r in results}
    copies = [
        replace(by_name[stem], name=name, path=by_name[stem].path.with_name(name))
        for stem in COPIES
        for name in submission_names(stem)
    ]
    others = [r for r in results if r.name not in COPIES]
    return [score(r, rubric) for r in (*copies, *others)]
