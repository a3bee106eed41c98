"""Grading a class past one machine: `--shard i/n` grades every n-th submission from the i-th,
and `merge` checks that the shards' archives are one grading of one class and writes its
reports (docs/grading.md, "Grading past one machine")."""

from __future__ import annotations

from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.reports import RunInfo
from cs336_harness.grading.reports.archive import read_archive
from cs336_harness.grading.results import SubmissionResult


def parse_shard(text: str) -> tuple[int, int]:
    """`2/4` → (2, 4): the second of four shards."""
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise ValueError(f"not a shard: {text!r} (example: 2/4)") from None
    if not 1 <= i <= n:
        raise ValueError(f"not a shard: {text!r} (i/n with 1 ≤ i ≤ n)")
    return i, n


def shard_positions(class_size: int, index: int, count: int) -> list[int]:
    """Places in the class of the submissions that shard `index` of `count` grades."""
    return list(range(index - 1, class_size, count))


def merge(directories: list[Path]) -> tuple[RunInfo, list[SubmissionResult]]:
    """The run and every submission, in class order, from the shards' report directories."""
    runs: dict[str, dict] = {}
    placed: dict[int, SubmissionResult] = {}
    for directory in directories:
        path = directory / "grading.json"
        try:
            run, submissions = read_archive(path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise GraderError(f"cannot read {path}: {error}") from None
        runs[run["shard"]] = run
        for position, result in submissions:
            if position in placed:
                raise GraderError(f"{result.name} appears in two shards")
            placed[position] = result
    settings = {tuple((k, v) for k, v in r.items() if k != "shard") for r in runs.values()}
    if len(settings) != 1:
        raise GraderError("the shards were graded with different settings (see grading.json)")
    first = next(iter(runs.values()))
    count = int(first["shard"].split("/")[1])
    expected = {f"{i}/{count}" for i in range(1, count + 1)}
    if set(runs) != expected:
        missing = ", ".join(sorted(expected - set(runs))) or "none"
        raise GraderError(f"shards missing: {missing} (got {', '.join(sorted(runs))})")
    if sorted(placed) != list(range(first["class_size"])):
        raise GraderError("the shards do not hold every submission of the class once")
    info = RunInfo(**(first | {"shard": f"{count} shards merged"}))
    return info, [placed[i] for i in sorted(placed)]
