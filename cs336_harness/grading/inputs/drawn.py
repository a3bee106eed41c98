"""Inputs drawn once and kept: `cs336-grade draw --seed S --out DIR`, then `cs336-grade
SUBMISSION --drawn-inputs DIR` as often as needed. DIR holds `seed`, `drawn_for`,
`fixtures/` and `diagnosis/` (the known mistakes' tables of every family); inputs a grading
draws for itself have no tables, its failures asking for the families' they need
(`family_tables`; docs/architecture.md, "The trusted bundle")."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from cs336_harness import withheld
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.inputs import family_tables
from cs336_harness.grading.inputs.bundle import draw_environment, remove_tree
from cs336_harness.grading.sandbox import interpreter
from cs336_harness.manifest import manifest_problems
from cs336_harness.untrusted import NAME_CHARS, clean

SEED_FILE = "seed"
FOR_FILE = "drawn_for"


@dataclass(frozen=True)
class DrawnInputs:
    seed: int
    root: Path
    # Whom they were drawn for ("Gradescope user 1234"); "": anyone.
    drawn_for: str = ""

    @property
    def fixtures(self) -> Path:
        return self.root / "fixtures"

    @property
    def tables(self) -> Path | None:
        """The known mistakes' tables drawn with them (`draw`'s `tables`), if any."""
        tables = self.root / family_tables.TABLES
        return tables if tables.is_dir() else None

    @property
    def description(self) -> str:
        """What the reports' `inputs:` line says of them."""
        regrade = f"regrade on them: --seed {self.seed}"
        if self.drawn_for:
            return f"drawn for {self.drawn_for}, seed {self.seed} ({regrade})"
        return f"drawn once for seed {self.seed} (cs336-grade draw; {regrade})"


def require_generator(what: str) -> None:
    """A GraderError in one line where this copy has no generator (a student handout): it
    cannot `what` ("draw inputs")."""
    if not withheld.available(withheld.GENERATOR):
        raise GraderError(
            f"this copy has no fixture generator and oracle (a student handout?), so it cannot "
            f"{what}"
        )


def draw(seed: int, dest: Path, drawn_for: str = "", tables: bool = True) -> DrawnInputs:
    """Draw the inputs for `seed` into `dest` (replacing what it held), in this process: the
    generator imports torch (`draw_apart` keeps that out of the grader). `tables`: with every
    family's table of known mistakes, where this copy has the catalog (6 s of CPU here)."""
    require_generator("draw inputs")
    remove_tree(dest)
    dest.mkdir(parents=True)
    withheld.load(f"{withheld.GENERATOR}.__main__").main(
        ["--seed", str(seed), "--out", str(dest / "fixtures"), "--quiet"]
    )
    if tables and withheld.available(withheld.CATALOG):
        family_tables.write_all(dest / "fixtures", dest / family_tables.TABLES)
    if drawn_for:
        (dest / FOR_FILE).write_text(drawn_for)
    (dest / SEED_FILE).write_text(f"{seed}\n")
    return read(dest)


def draw_apart(seed: int, dest: Path, drawn_for: str = "") -> DrawnInputs:
    """`draw` in a process of its own (`cs336-grade draw`), as every trusted process is
    started (`interpreter`): the generator imports torch, which the grader never holds, and
    its memory is given back before anything is graded. For one grading, so without tables:
    a failure asks for the family's it needs."""
    dest = dest.resolve()
    dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    args = ["draw", "--seed", str(seed), "--out", str(dest), "--for", drawn_for, "--no-tables"]
    done = subprocess.run(
        interpreter.command("cs336_harness.grading", *args),
        capture_output=True,
        text=True,
        cwd=dest.parent,
        env=draw_environment(dest.parent),
    )
    if done.returncode != 0:
        raise GraderError(f"drawing the inputs failed (seed {seed}):\n{done.stderr[-4000:]}")
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
    drawn_for = (root / FOR_FILE).read_text() if (root / FOR_FILE).is_file() else ""
    # Named by a course's key or a folder's name: cleaned as every name in a report is.
    drawn_for = clean(drawn_for, NAME_CHARS)
    return DrawnInputs(seed, root, drawn_for)
