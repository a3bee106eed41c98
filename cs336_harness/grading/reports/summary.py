"""`summary.csv`: one row per submission: its points per family and in the hardening entry,
how many tests got each verdict, its rules' findings and their cost, how many worker
processes it took, and the sandbox, environment and seed it was graded with."""

from __future__ import annotations

import csv
import io
from collections import Counter
from pathlib import Path

from cs336_harness.grading.reports.checked import write_utf8
from cs336_harness.grading.results import Status
from cs336_harness.grading.scoring import Score


def _seed(result: Score, run_seed: int | None) -> int | str:
    """The seed of a submission's inputs: its own (`--per-student`), else the run's."""
    seed = result.submission.seed if result.submission.inputs else run_seed
    return "stored" if seed is None else seed


def write_summary(
    results: list[Score], path: Path, sandbox: str, seed: int | None, environment: str = ""
) -> None:
    families = list(dict.fromkeys(f.family for r in results for f in r.families))
    statuses = [str(s) for s in Status]
    # Encoded whole, then written: a lone surrogate stops it before anything is on disk.
    with io.StringIO(newline="") as f:
        writer = csv.writer(f)
        writer.writerow(
            [
                "submission",
                "score",
                "max_score",
                "percent",
                *families,
                *statuses,
                "forbidden_uses",
                "rules_penalty",
                "forbidden_call_sites",
                "seconds",
                "workers",
                "sandbox",
                "environment",
                "seed",
                "path",
            ]
        )
        for result in results:
            points = {fam.family: f"{fam.points:g}" for fam in result.families}
            counts = Counter(str(t.status) for t in result.submission.tests)
            writer.writerow(
                [
                    result.submission.name,
                    f"{result.points:g}",
                    f"{result.max_points:g}",
                    f"{result.percent:.1f}",
                    *(points.get(fam, "") for fam in families),
                    *(counts.get(s, 0) for s in statuses),
                    result.submission.forbidden_count,
                    f"{result.penalty:g}",
                    result.submission.called_count,
                    f"{result.submission.wall_time:.1f}",
                    result.submission.workers,
                    sandbox,
                    environment,
                    _seed(result, seed),
                    str(result.submission.path),
                ]
            )
        write_utf8(path, f.getvalue())
