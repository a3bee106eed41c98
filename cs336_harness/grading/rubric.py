"""The rubric: how many points each test family is worth (`rubric.toml` at the repo root)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.adapter_loader import REPO_ROOT

DEFAULT_RUBRIC = REPO_ROOT / "rubric.toml"


class RubricError(ValueError):
    """The rubric file is missing or malformed; the grader cannot run without it."""


@dataclass(frozen=True)
class FamilyPoints:
    family: str
    title: str
    points: float


@dataclass(frozen=True)
class Rubric:
    """Families in the rubric's order, which is also the order of every report."""

    families: tuple[FamilyPoints, ...]

    def get(self, family: str) -> FamilyPoints | None:
        return next((f for f in self.families if f.family == family), None)

    def order(self, family: str) -> int:
        """Rubric position of `family`; families the rubric lacks sort after all others."""
        names = [f.family for f in self.families]
        return names.index(family) if family in names else len(names)


def _entry(family: str, value: object) -> FamilyPoints:
    if not isinstance(value, dict) or set(value) - {"points", "title"} or "points" not in value:
        raise RubricError(f"rubric entry {family!r} must be a table with `points` and `title`")
    points = value["points"]
    if isinstance(points, bool) or not isinstance(points, int | float) or points < 0:
        raise RubricError(f"rubric entry {family!r}: points must be a number ≥ 0, got {points!r}")
    return FamilyPoints(family, str(value.get("title", family)), float(points))


def load_rubric(path: Path = DEFAULT_RUBRIC) -> Rubric:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise RubricError(f"cannot read the rubric {path}: {error}") from error
    table = data.get("families")
    if not isinstance(table, dict) or not table:
        raise RubricError(f"rubric {path} has no [families] table")
    return Rubric(tuple(_entry(name, value) for name, value in table.items()))
