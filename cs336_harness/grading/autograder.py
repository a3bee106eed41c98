"""`cs336-grade autograder`: a Gradescope autograder package.

Gradescope unpacks the zip into /autograder/source, runs its `setup.sh` once as root to
build an image, then for every submission runs `run_autograder` in a fresh container of
that image, which grades /autograder/submission (`run_autograder.py`).

The zip holds what grading a submission on fresh inputs needs: the harness and the graded
tests as the student handout has them, and what the handout withholds for that purpose
(the fixture generator, the oracle and its text corpus, the catalog of known mistakes that
names a failure's likely cause); the rubric; pyproject.toml and uv.lock for the locked
environment. Students never see it: Gradescope keeps it to the container, and the sandbox
keeps it from the submission's code. Left out: a reference `cs336_basics` (a submission
brings its own, and grading never imports the repository's), `tests/adapters.py`, the
stored fixtures (every run draws fresh ones) and the grader's own tests.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import zipfile
from pathlib import Path

from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.trusted import NOT_TRUSTED_TESTS, copy_tree
from cs336_harness.paths import REPO_ROOT

# Withheld from the handout, needed here: fresh inputs come from the fixture generator and
# the oracle, diagnoses on them from the catalog of known mistakes.
NEEDED = ("cs336_staff",)
# Copied as they are; the corpus is the fixture generator's source of English text.
COPIED = ("pyproject.toml", "uv.lock", "data/shakespeare_tragedies.txt")
EXECUTABLE = ("setup.sh", "run_autograder")
# Where Gradescope puts everything: source/ (the zip), submission/, results/.
GRADESCOPE_ROOT = "/autograder"

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image, with the zip
# unpacked in /autograder/source. Written by `cs336-grade autograder`.
set -euo pipefail
cd "${{AUTOGRADER_ROOT:-{root}}}/source"
# bubblewrap: the sandbox every submission's code runs in; curl: for uv's installer.
apt-get update
apt-get install -y --no-install-recommends bubblewrap ca-certificates curl
# uv from its official installer (pip refuses system-wide installs on current Ubuntu), put
# where every later step finds it.
curl -LsSf https://astral.sh/uv/install.sh | env UV_UNMANAGED_INSTALL=/usr/local/bin sh
# The locked environment, in .venv; uv fetches a Python >= 3.11 if the image's is older.
# Bytecode is compiled now: graded processes never write any, and would compile torch anew.
uv sync --locked --no-dev --compile-bytecode
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission, in a fresh container of the image setup.sh
# built: it grades /autograder/submission on inputs drawn for this run and writes
# /autograder/results/results.json. Written by `cs336-grade autograder`, with its options.
# Outside Gradescope, AUTOGRADER_ROOT replaces /autograder and AUTOGRADER_PYTHON the
# interpreter of the environment setup.sh installed.
set -euo pipefail
root="$(cd "${{AUTOGRADER_ROOT:-{root}}}" && pwd)"
cd "$root/source"
# `-m` puts this directory first on the import path: the harness that grades is this copy,
# whichever environment the interpreter belongs to.
exec "${{AUTOGRADER_PYTHON:-.venv/bin/python}}" -m cs336_harness.grading.run_autograder "$root" \\
  {options}
"""

# pyproject.toml names README.md as the package's readme, so the install needs one.
README = """\
# CS336 assignment 1: Gradescope autograder

Written by `cs336-grade autograder` from the cs336-basics harness; upload the zip as a
programming assignment's autograder. `setup.sh` installs the locked environment and
bubblewrap; `run_autograder` grades each submission (`cs336_basics/` and
`tests/adapters.py` at its top level) on inputs drawn for it, with the options it lists.
Each result's output names its seed (`inputs: fresh, drawn for seed S`), and
`cs336-grade SUBMISSION --seed S` regrades on the same inputs. `rubric.toml` holds the
points and, in `[gradescope]`, who sees the results and when.

For staff only: this package holds the oracle and the fixture generator.
"""


def build(dest: Path, rubric: Path, options: list[str], repo: Path = REPO_ROOT) -> None:
    """Write the autograder zip to `dest`: `rubric` as its rubric.toml, and a run_autograder
    that passes `options` to cs336-grade."""
    missing = [name for name in (*NEEDED, *COPIED) if not (repo / name).exists()]
    if missing:
        raise GraderError(
            f"{repo} has no {', '.join(missing)}, which the autograder needs to draw fresh "
            "inputs (a student handout withholds them)"
        )
    with tempfile.TemporaryDirectory(prefix="cs336-autograder-") as staging:
        tree = Path(staging)
        copy_tree(repo / "cs336_harness", tree / "cs336_harness", repo)
        for name in NEEDED:
            copy_tree(repo / name, tree / name, repo, withheld=())
        copy_tree(repo / "tests", tree / "tests", repo, skip=NOT_TRUSTED_TESTS)
        for name in COPIED:
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(repo / name, tree / name)
        shutil.copyfile(rubric, tree / "rubric.toml")
        (tree / "README.md").write_text(README)
        (tree / "setup.sh").write_text(SETUP.format(root=GRADESCOPE_ROOT))
        run = RUN.format(root=GRADESCOPE_ROOT, options=shlex.join(options))
        (tree / "run_autograder").write_text(run)
        _zip(tree, dest)


def _zip(tree: Path, dest: Path) -> None:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(tree.rglob("*")):
            if not path.is_file():
                continue
            name = path.relative_to(tree).as_posix()
            # A fixed date: the same tree gives the same zip, byte for byte.
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            # Unix permissions: Gradescope runs the two scripts as they are.
            info.external_attr = (0o755 if name in EXECUTABLE else 0o644) << 16
            archive.writestr(info, path.read_bytes())
