"""A forbidden call site the watcher saw while a family's tests ran, as every report writes
it (`pytest --rules` and the grader's): evidence from the submission's own process."""

from __future__ import annotations

from dataclasses import dataclass

CALLED_HEADING = (
    "assignment rules (calls seen while it ran, as its own process reported them: "
    "evidence it could hide, not proof)"
)


@dataclass(frozen=True, order=True)
class Called:
    """A forbidden definition the submission called from `path`:`line` while the tests of
    `family` ran; `count` torch calls were seen through it (a module's construction and
    forward make several)."""

    family: str
    path: str
    line: int
    name: str
    count: int

    def __str__(self) -> str:
        calls = f"{self.count} torch call{'s' * (self.count != 1)}"
        return f"{self.family}: {self.path}:{self.line}: {self.name} ({calls})"
