"""`grading.json`: everything a run found, in full, so that shards can be merged.

`cs336-grade merge` reads the archives of every shard and writes the class's reports from
them with the same writers, so merged reports are those of grading all at once.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.results import Called, GradedTest, Status, SubmissionResult
from cs336_harness.grading.scoring import Score
from cs336_harness.untrusted import NAME_CHARS, clean

FORMAT = 1


def _submission(result: SubmissionResult, position: int) -> dict[str, Any]:
    data = asdict(result)
    data["path"] = str(result.path)
    data["position"] = position
    return data


def write_archive(
    results: list[Score], path: Path, info: dict[str, Any], positions: list[int]
) -> None:
    """`positions`: each submission's place in the whole class, which merging restores."""
    submissions = [_submission(r.submission, i) for r, i in zip(results, positions, strict=True)]
    write_json(path, {"format": FORMAT, "run": info, "submissions": submissions})


def _test(data: dict[str, Any]) -> GradedTest:
    return GradedTest(
        **data
        | {
            "status": Status(data["status"]),
            "message": clean(data["message"], None),
            "details": clean(data["details"], None, multiline=True),
            "trivial": clean(data.get("trivial", ""), None),
            # Absent from a grading.json written before the diagnosis was recorded.
            "diagnosis": tuple(clean(d, None) for d in data.get("diagnosis", ())),
            "error_shape": clean(data.get("error_shape", ""), None),
            # Absent from a grading.json written before efficiency was graded.
            "cost_cause": clean(data.get("cost_cause", ""), None),
            "follows_from": clean(data.get("follows_from", ""), None),
        }
    )


def _called(data: dict[str, Any]) -> Called:
    return Called(
        family=clean(data["family"], None),
        path=clean(data["path"], None),
        line=int(data["line"]),
        name=clean(data["name"], None),
        count=int(data["count"]),
    )


def read_archive(path: Path) -> tuple[dict[str, Any], list[tuple[int, SubmissionResult]]]:
    """The run's description and its submissions, each with its place in the class.

    This is merge's door into the grader, so the submissions' text is cleaned again
    (`untrusted`): a grading.json of this version's is clean already, and stays as it is,
    but one written elsewhere (an older version, an edited file) is not. Its lengths were
    bounded by the run that wrote it."""
    data = json.loads(path.read_bytes())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a grading.json this version of cs336-grade reads")
    results = [
        (
            s["position"],
            SubmissionResult(
                name=clean(s["name"], NAME_CHARS),
                path=Path(clean(s["path"], None)),
                tests=tuple(_test(t) for t in s["tests"]),
                output=clean(s["output"], None, multiline=True),
                wall_time=s["wall_time"],
                workers=s["workers"],
                peak_memory=s.get("peak_memory", 0),
                load=s.get("load", ""),
                notes=tuple(s.get("notes", ())),
                forbidden_count=int(s.get("forbidden_count", 0)),
                forbidden=tuple(clean(f, None) for f in s.get("forbidden", ())),
                unread=tuple(clean(u, None) for u in s.get("unread", ())),
                called_count=int(s.get("called_count", 0)),
                called=tuple(_called(c) for c in s.get("called", ())),
                inputs=clean(s.get("inputs", ""), None),
                seed=None if s.get("seed") is None else int(s["seed"]),
            ),
        )
        for s in data["submissions"]
    ]
    return data["run"], results
