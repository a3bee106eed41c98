"""`cs336-grade autograder`: a Gradescope autograder package, a zip of what grading a
submission on fresh inputs needs and a `setup.sh` for Gradescope's default image (`Image`)
(docs/architecture.md, "The autograder and the handout")."""

from __future__ import annotations

import shlex
import shutil
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from cs336_harness.grading.environments.courses import Course
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.inputs.bundle import NOT_TRUSTED_TESTS, copy_tree
from cs336_harness.grading.sandbox import container
from cs336_harness.grading.sandbox.limits import format_size
from cs336_harness.paths import REPO_ROOT

# Withheld from the handout, needed here: fresh inputs come from the fixture generator and
# the oracle, diagnoses on them from the catalog of known mistakes.
NEEDED = ("cs336_staff",)
# Copied as they are; the corpus is the fixture generator's source of English text.
COPIED = ("pyproject.toml", "uv.lock", "data/shakespeare_tragedies.txt")
EXECUTABLE = ("setup.sh", "run_autograder")
# Where Gradescope puts everything: source/ (the zip), submission/, results/.
GRADESCOPE_ROOT = "/autograder"
# The uv that setup.sh installs (from PyPI), and so the Python builds it can download: a
# rebuilt image gets the same tools as the first.
UV_VERSION = "0.13.9"
# The Pythons the harness runs on (pyproject.toml's requires-python), in the image the
# grader's and the course's alike.
PYTHONS = ("3.11", "3.12", "3.13")
DEFAULT_PYTHON = "3.12"
# The torch versions the harness is checked on: those `.ci/matrix.py` names (2.6, the 2025
# course's; 2.15, the newest allowed), and uv.lock's own (`locked_torch`: 2.11, the 2026
# course's, which the matrix's locked cells check). A course may pick another: the build
# warns.
MATRIX_TORCH = ("2.6", "2.15")
# How the inputs are drawn: for each student (or group) from a secret the zip keeps, once
# for the whole assignment in setup.sh, or anew for every run.
PER_STUDENT, PER_ASSIGNMENT, PER_SUBMISSION = "per-student", "per-assignment", "per-submission"
INPUTS = (PER_STUDENT, PER_ASSIGNMENT, PER_SUBMISSION)
# The file of the per-student inputs' secret, beside run_autograder: setup.sh closes it to
# every user but root, as the rest of the package.
SECRET_FILE = "inputs_secret"
# Gradescope's default autograder timeout, in seconds (its settings allow up to 40 minutes).
GRADESCOPE_TIMEOUT = 600
# Of that timeout, what run_autograder does not hand the grader as its deadline: the
# container's start, the interpreter's, and Gradescope reading the results afterwards.
TIMEOUT_MARGIN = 45

SETUP = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image, with the zip
# unpacked in /autograder/source. Written by `cs336-grade autograder`, with the choices
# below; it closes with the time it took and the environment's size.
set -euo pipefail
UV_VERSION={uv}
PYTHON={python}
TORCH={torch}
# The course's packages beyond uv.lock's (its rubric's [environment]), installed beside them.
PACKAGES=({packages})
# cpu: PyTorch's CPU-only wheels (no CUDA libraries a grader never loads); empty: PyPI's
# default (CUDA) build.
TORCH_BACKEND={backend}
# The seed of the inputs every submission is graded on, drawn once below; empty: inputs
# drawn by each run, for its student (PER_STUDENT=1) or anew.
SEED={seed}
PER_STUDENT={per_student}
cd "${{AUTOGRADER_ROOT:-{root}}}/source"
export DEBIAN_FRONTEND=noninteractive
# bubblewrap: the sandbox every submission's code runs in; pip: to install uv from PyPI.
apt-get update -qq
apt-get install -y -qq --no-install-recommends bubblewrap ca-certificates python3-pip >/dev/null
# Newer Ubuntus refuse pip's system-wide installs unless asked; 22.04's pip ignores this.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-cache-dir "uv==$UV_VERSION"
# A Python of uv's own (never the image's: Ubuntu 22.04's python3.11 is a release
# candidate), under /opt, where every user can read it; uv's cache only for the build.
export UV_PYTHON_INSTALL_DIR=/opt/cs336-python UV_PYTHON_PREFERENCE=only-managed
export UV_CACHE_DIR=/tmp/cs336-uv-cache UV_NO_PROGRESS=1
uv venv --python "$PYTHON" .venv
# uv.lock's versions of everything but torch and what only torch needs, then the torch
# chosen (its own dependencies resolved for it); bytecode now, as graded processes write none.
uv export --frozen --no-dev --no-emit-project --no-hashes --no-header --no-annotate \\
  --prune torch --output-file requirements.txt >/dev/null
uv pip install --no-config --python .venv/bin/python --compile-bytecode \\
  ${{TORCH_BACKEND:+--torch-backend "$TORCH_BACKEND"}} -r requirements.txt \\
  "$TORCH" "${{PACKAGES[@]}}"
rm -rf "$UV_CACHE_DIR"
if [[ -n "$SEED" ]]; then
  .venv/bin/python -m cs336_harness.grading draw --seed "$SEED" --out inputs
elif [[ -n "$PER_STUDENT" ]]; then
  # Each run draws its student's inputs: one draw now, thrown away, says what that costs
  # and that the generator works in this image.
  start=$SECONDS
  .venv/bin/python -m cs336_harness.grading draw --seed 0 --out /tmp/cs336-draw-check
  rm -rf /tmp/cs336-draw-check
  echo "setup.sh: a student's inputs take $((SECONDS - start)) s to draw here"
fi
# Gradescope's container refuses namespaces, so the sandbox's user tier confines each
# submission: its user may read the environment (.venv, the Python under /opt) and nothing
# else of the package: not the oracle, not the drawn inputs with their expected outputs, not
# this script's seed, not the students' secret. The grader refuses to grade if it could.
find . -mindepth 1 -maxdepth 1 ! -name .venv -exec chmod -R go-rwx {{}} +
.venv/bin/python -c 'import sys, torch; print("python", sys.version[:7], torch.__version__)'
size=$(du -sh --total .venv "$UV_PYTHON_INSTALL_DIR" | tail -1 | cut -f1)
echo "setup.sh: $SECONDS s; environment: $size"
"""

RUN = """\
#!/usr/bin/env bash
# Gradescope runs this for every submission, in a fresh container of the image setup.sh
# built: it grades /autograder/submission (for the student submission_metadata.json names)
# and writes /autograder/results/results.json before Gradescope's timeout. Written by
# `cs336-grade autograder`, with its options.
# Outside Gradescope, AUTOGRADER_ROOT replaces /autograder and AUTOGRADER_PYTHON the
# interpreter of the environment setup.sh installed.
set -euo pipefail
root="$(cd "${{AUTOGRADER_ROOT:-{root}}}" && pwd)"
cd "$root/source"
# `-m` puts this directory first on the import path: the harness that grades is this copy,
# whichever environment the interpreter belongs to.
exec "${{AUTOGRADER_PYTHON:-.venv/bin/python}}" \\
  -m cs336_harness.grading.gradescope.run_autograder {own}"$root" {options}
"""

# pyproject.toml names README.md as the package's readme, so the install needs one.
README = """\
# CS336 assignment 1: Gradescope autograder

Written by `cs336-grade autograder` from the cs336-basics harness; upload the zip as a
programming assignment's autograder. `setup.sh` installs bubblewrap and the environment
(its first lines say which Python and torch); `run_autograder` grades each submission
(`cs336_basics/` and `tests/adapters.py`, at its top level or in one folder) with the options
it lists, on inputs drawn for its student (or group) from `inputs_secret` (unless the zip
was built with `--inputs per-assignment`, which setup.sh draws once). Its output (staff only,
unless the rubric says otherwise) names the seed, and `cs336-grade SUBMISSION --seed S`
regrades on the same inputs. `rubric.toml` holds the
points and, in `[gradescope]`, who sees the results and when.

For staff only: this package holds the oracle and the fixture generator.
"""


def locked_torch(repo: Path = REPO_ROOT) -> str:
    """The torch version uv.lock holds, e.g. "2.15.0"."""
    lock = tomllib.loads((repo / "uv.lock").read_text())
    return next(p["version"] for p in lock["package"] if p["name"] == "torch")


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


def torch_requirement(course: Course, repo: Path = REPO_ROOT) -> str:
    """The torch setup.sh installs for `course`: uv.lock's own, exactly, where the course's
    specifier admits it (the version the grader's tests ran on), else the specifier as the
    course writes it."""
    locked = locked_torch(repo)
    if SpecifierSet(course.torch).contains(Version(locked), prereleases=True):
        return f"torch=={locked}"
    return f"torch{course.torch}"


def unchecked_torch(course: Course, repo: Path = REPO_ROOT) -> str:
    """A one-line warning where the course's torch is not one the harness is checked on;
    "" where it is."""
    checked = sorted({*MATRIX_TORCH, _minor(locked_torch(repo))}, key=Version)
    if course.torch_minor in checked:
        return ""
    return (
        f"warning: the harness is not checked on torch {course.torch_minor} (it is on "
        f"{', '.join(checked)}: .ci/matrix.py and uv.lock); the autograder installs it as "
        f"asked ({course.describe()}): grade a few submissions with Gradescope's Test "
        "Autograder before the class does"
    )


def extra_packages(course: Course, repo: Path = REPO_ROOT) -> tuple[str, ...]:
    """The course's packages that setup.sh installs beside uv.lock's: those uv.lock lacks.
    A GraderError where one asks for another version than uv.lock's, which the grader
    needs in the same environment (the image holds one for both)."""
    lock = tomllib.loads((repo / "uv.lock").read_text())
    locked = {canonicalize_name(p["name"]): p["version"] for p in lock["package"]}
    extra = []
    for text in course.packages:
        requirement = Requirement(text)
        version = locked.get(canonicalize_name(requirement.name))
        if version is None:
            extra.append(text)
        elif not requirement.specifier.contains(Version(version), prereleases=True):
            raise GraderError(
                f"{course.describe()} asks for {text}, but the grader runs on uv.lock's "
                f"{requirement.name} {version} in the same environment: the autograder's "
                "image cannot hold both"
            )
    return tuple(extra)


def image_for(
    course: Course, cuda: bool, memory: int, repo: Path = REPO_ROOT, **choices: Any
) -> Image:
    """The image of `course`'s environment, with PyPI's CUDA build of torch where `cuda`,
    for a container of `memory` bytes (the assignment's setting), and the other `choices`
    (`Image`'s seed, timeout, secret). A GraderError, in one line, where it cannot grade."""
    if course.python not in PYTHONS:
        raise GraderError(
            f"{course.describe()} runs on Python {course.python}, and the grader runs beside "
            f"it in the image: it needs Python {PYTHONS[0]} to {PYTHONS[-1]}"
        )
    needs = container.for_image(cuda)
    too_small = needs.too_small(memory)
    if too_small:
        raise GraderError(
            f"{too_small}; then build with --memory {format_size(needs.needed).replace(' ', '')}"
            + ("" if not cuda else ", or leave out --cuda (the CPU-only build fits in 720 MiB)")
        )
    return Image(
        python=course.python,
        torch=torch_requirement(course, repo),
        packages=extra_packages(course, repo),
        cuda=cuda,
        memory=memory,
        **choices,
    )


@dataclass(frozen=True)
class Image:
    """What setup.sh installs and draws: the course's choices (`image_for`)."""

    python: str = DEFAULT_PYTHON
    torch: str = ""  # the requirement setup.sh installs; empty: uv.lock's torch
    packages: tuple[str, ...] = ()  # beside uv.lock's
    cuda: bool = False
    # The assignment's container memory (bytes): each run caps the worker to fit in it.
    memory: int = container.GRADESCOPE_MEMORY
    # The seed of the inputs drawn once for every submission; None: drawn per submission.
    seed: int | None = None
    # Gradescope's autograder timeout (seconds): results.json is written before it.
    timeout: float = GRADESCOPE_TIMEOUT
    # The secret each student's inputs are drawn from (`student_inputs`); None: not per student.
    secret: str | None = None

    def setup(self, repo: Path) -> str:
        return SETUP.format(
            root=GRADESCOPE_ROOT,
            uv=UV_VERSION,
            python=self.python,
            torch=shlex.quote(self.torch or f"torch=={locked_torch(repo)}"),
            packages=shlex.join(self.packages),
            backend="" if self.cuda else "cpu",
            seed="" if self.seed is None else self.seed,
            per_student="1" if self.secret is not None else "",
        )

    def run_options(self) -> list[str]:
        """What run_autograder adds to the course's grading options."""
        deadline = max(self.timeout - TIMEOUT_MARGIN, self.timeout / 2)
        drawn = [] if self.seed is None else ["--drawn-inputs", "inputs"]
        return [f"--deadline={deadline:g}", *drawn]

    def own_options(self) -> list[str]:
        """What run_autograder itself is told of the image (before the grading options)."""
        return ["--cuda"] if self.cuda else []


def stage(tree: Path, rubric: Path, repo: Path = REPO_ROOT) -> None:
    """Copy into `tree` what grading a submission on fresh inputs needs: the harness, the
    graded tests and what the handout withholds for drawing inputs (`NEEDED`), the
    environment's files and the corpus (`COPIED`), and `rubric` as rubric.toml. A platform's
    package adds its own scripts and README."""
    missing = [name for name in (*NEEDED, *COPIED) if not (repo / name).exists()]
    if missing:
        raise GraderError(
            f"{repo} has no {', '.join(missing)}, which grading on fresh inputs needs (a "
            "student handout withholds them)"
        )
    copy_tree(repo / "cs336_harness", tree / "cs336_harness", repo)
    for name in NEEDED:
        copy_tree(repo / name, tree / name, repo, withheld=())
    copy_tree(repo / "tests", tree / "tests", repo, skip=NOT_TRUSTED_TESTS)
    for name in COPIED:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(repo / name, tree / name)
    shutil.copyfile(rubric, tree / "rubric.toml")


def build(
    dest: Path, rubric: Path, options: list[str], repo: Path = REPO_ROOT, image: Image = Image()
) -> None:
    """Write the autograder zip to `dest`: `rubric` as its rubric.toml, a setup.sh that
    installs and draws what `image` says, and a run_autograder that passes `options` to
    cs336-grade."""
    setup = image.setup(repo)
    with tempfile.TemporaryDirectory(prefix="cs336-autograder-") as staging:
        tree = Path(staging)
        stage(tree, rubric, repo)
        (tree / "README.md").write_text(README)
        (tree / "setup.sh").write_text(setup)
        own = [*image.own_options()]
        own += ["--per-student", SECRET_FILE] if image.secret is not None else []
        own = f"{shlex.join(own)} " if own else ""
        run = RUN.format(
            root=GRADESCOPE_ROOT, own=own, options=shlex.join(options + image.run_options())
        )
        (tree / "run_autograder").write_text(run)
        if image.secret is not None:
            (tree / SECRET_FILE).write_text(f"{image.secret}\n")
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
            mode = 0o755 if name in EXECUTABLE else 0o600 if name == SECRET_FILE else 0o644
            info.external_attr = mode << 16
            archive.writestr(info, path.read_bytes())
