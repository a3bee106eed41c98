"""A large class's results, made up without grading anyone, for the class report's size
(`test_class_report.py`) and its build time (`make bench`).

Every submission has the suite's tests (a test per stored case of each family, contract
or hardening as in one of every five), and fails a few families the ways a class does: a
catalogued mistake with the catalog's line, an error shape, "not implemented", its own
exception, a time-out. Seeded: the same class every time.

`python -m tests.grading.large_class SUBMISSIONS DIR` writes its class report into DIR and
prints the seconds the writing took (Matplotlib's and Jinja2's imports included, as a
grading run pays them) and the bytes of report.html.
"""

from __future__ import annotations

import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.families import FAMILIES
from cs336_harness.grading.results import CONTRACT, HARDENING, GradedTest, Status, SubmissionResult
from cs336_harness.grading.scoring import Score, load_rubric, score
from cs336_harness.judging.case_layout import case_table
from cs336_harness.judging.diagnosis.error_shape import KINDS
from cs336_harness.paths import REPO_ROOT
from cs336_staff.catalog import MISTAKES, Mistake

FIXTURES = REPO_ROOT / "tests" / "fixtures"
# A submission fails each family with this probability: about four families each.
FAILS = 0.15
# Family → the catalogued mistakes that can show there.
CATALOGUED: dict[str, list[Mistake]] = {}
for _mistake in MISTAKES:
    for _family in _mistake.variants:
        CATALOGUED.setdefault(_family, []).append(_mistake)
RUN = {
    "sandbox": "bubblewrap",
    "inputs": "fresh, drawn for seed 7",
    "seed": 7,
    "partial": True,
    "class_size": 0,
    "shard": "1/1",
    "environment": "Python 3.12, torch 2.15.0",
    "limits": "30 s of CPU a call",
}


def _suite() -> list[GradedTest]:
    cases = case_table(FIXTURES)
    tests = []
    for family in FAMILIES:
        for i, entry in enumerate(cases.get(family.name, [])):
            nodeid = f"{family.test_file}::test_{family.name}[{entry['id']}]"
            kind = HARDENING if i % 5 == 4 else CONTRACT
            tests.append(GradedTest(nodeid, family.name, Status.PASSED, kind=kind))
    return tests


@dataclass(frozen=True)
class Failing:
    """How a submission fails one family: the same way on every case it fails."""

    how: str
    mistake: Mistake | None
    shape: str
    number: int


def _failure(test: GradedTest, failing: Failing) -> GradedTest:
    comparison = "output ((4, 12, 64), torch.float32) differs from the oracle."
    numbers = f"Mismatched elements: {failing.number} / 3072"
    how, mistake = failing.how, failing.mistake
    if how == "mistake" and mistake is not None:
        return GradedTest(test.nodeid, test.family, Status.FAILED, mistake.line[:300],
                          f"{mistake.line}\n{comparison}\n\n{numbers}", kind=test.kind,
                          diagnosis=(mistake.id,))  # fmt: skip
    if how in ("mistake", "shape"):
        line = f"error shape: the output is the expected times 0.{failing.number} ({failing.shape})"
        return GradedTest(test.nodeid, test.family, Status.FAILED, line,
                          f"{line}\nno known mistake matches; {comparison}", kind=test.kind,
                          error_shape=failing.shape)  # fmt: skip
    if how == "raised":
        message = f"RuntimeError: mat1 and mat2 shapes cannot be multiplied ({failing.number}x7)"
        return GradedTest(test.nodeid, test.family, Status.FAILED, message,
                          f"tests/families/x.py:16: in test\nE   {message}", kind=test.kind,
                          submission_raised=True)  # fmt: skip
    if how == "timed out":
        message = "timed out: the call used more than 30 s of CPU"
        return GradedTest(test.nodeid, test.family, Status.TIMED_OUT, message, kind=test.kind)
    message = f"not implemented: run_{test.family}"
    return GradedTest(test.nodeid, test.family, Status.NOT_IMPLEMENTED, message, kind=test.kind)


def _submission(index: int, suite: list[GradedTest], rng: random.Random) -> SubmissionResult:
    ways = ("mistake", "mistake", "shape", "raised", "not implemented", "timed out")
    failing = {
        f.name: Failing(
            rng.choice(ways),
            rng.choice(CATALOGUED[f.name]) if f.name in CATALOGUED else None,
            rng.choice(KINDS),
            rng.randint(1, 3072),
        )
        for f in FAMILIES
        if rng.random() < FAILS
    }
    tests = []
    for test in suite:
        way = failing.get(test.family)
        failed = way is not None and (way.how == "not implemented" or rng.random() < 0.6)
        tests.append(_failure(test, way) if failed else test)
    return SubmissionResult(
        name=f"student-{index:04d}-{rng.choice(('ada', 'grace', 'alan', 'edsger'))}",
        path=Path(f"submissions/student-{index:04d}"),
        tests=tuple(tests),
        output="",
        wall_time=rng.uniform(5, 60),
        workers=1,
        peak_memory=rng.randint(300, 900) << 20,
        forbidden_count=int(rng.random() < 0.1),
        forbidden=("cs336_basics/model.py:12: torch.nn.Linear",) if rng.random() < 0.1 else (),
    )


def large_class(size: int, seed: int = 0) -> list[Score]:
    rng = random.Random(seed)
    suite = _suite()
    rubric = load_rubric()
    return [score(_submission(i, suite, rng), rubric) for i in range(size)]


def main() -> None:
    size, out = int(sys.argv[1]), Path(sys.argv[2])
    results = large_class(size)
    start = time.perf_counter()
    from cs336_harness.grading.reports.class_report import HTML, write_class_report

    write_class_report(results, out, RUN | {"class_size": size})
    print(f"{time.perf_counter() - start:.3f} {(out / HTML).stat().st_size}")


if __name__ == "__main__":
    main()
