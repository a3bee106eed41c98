"""Inputs drawn once and kept: `cs336-grade draw --seed S --out DIR`, then
`cs336-grade SUBMISSION --drawn-inputs DIR` as often as needed.

A Gradescope autograder draws them in `setup.sh`, so that every submission of an assignment
is graded on the same inputs (a resubmission of the same code gets the same score) and no
run spends its time limit on the oracle. DIR holds

    seed                     the seed they were drawn for (the reports name it)
    fixtures/                the generator's fixtures and the oracle's expected outputs
    diagnosis.safetensors    the known mistakes' outputs on them (`diagnosis/`), when the
                             catalog is there to compute them
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cs336_harness import withheld
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.trusted import DIAGNOSIS_TABLE, fresh_fixtures, remove_tree
from cs336_harness.manifest import manifest_problems

SEED_FILE = "seed"


@dataclass(frozen=True)
class DrawnInputs:
    seed: int
    root: Path

    @property
    def fixtures(self) -> Path:
        return self.root / "fixtures"

    @property
    def table(self) -> Path | None:
        table = self.root / DIAGNOSIS_TABLE
        return table if table.is_file() else None


def draw(seed: int, dest: Path) -> DrawnInputs:
    """Draw the inputs for `seed` into `dest` (replacing what it held)."""
    remove_tree(dest)
    dest.mkdir(parents=True)
    fresh_fixtures(seed, dest / "fixtures")
    if withheld.available(withheld.CATALOG):
        from cs336_harness.diagnosis.diagnose import write_table

        write_table(dest / "fixtures", dest / DIAGNOSIS_TABLE)
    (dest / SEED_FILE).write_text(f"{seed}\n")
    return read(dest)


def read(root: Path) -> DrawnInputs:
    """The inputs `draw` wrote to `root`, checked against their manifest; a GraderError
    names what is wrong."""
    root = root.resolve()
    try:
        seed = int((root / SEED_FILE).read_text())
    except (OSError, ValueError):
        raise GraderError(
            f"{root} holds no inputs drawn by `cs336-grade draw` (no readable {SEED_FILE})"
        ) from None
    problems = manifest_problems(root / "fixtures")
    if problems:
        raise GraderError("the drawn inputs fail their manifest:\n  " + "\n  ".join(problems))
    return DrawnInputs(seed, root)
