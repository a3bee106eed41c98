"""`cs336-grade prairielearn`: what a course adds to its PrairieLearn course repository for the
assignment (docs/grading.md, "On PrairieLearn"):

    serverFilesCourse/cs336/          the grading package, as the Gradescope autograder
                                      holds it, with its entry point and the inputs' secret
    questions/cs336_assignment1/      the question: info.json (its external grading options)
                                      and question.html (an upload of the submission's zip)
    image/                            the image's recipe: Dockerfile, with the environment's
                                      pyproject.toml and uv.lock, to build and push

The image holds the course's Python and packages and none of its grading code, which comes
with every job in /grade/serverFilesCourse: images on Docker Hub are public, and the package
holds the oracle."""

from __future__ import annotations

import json
import shlex
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from cs336_harness.grading.environments.courses import Course
from cs336_harness.grading.packaging.autograder import UV_VERSION, stage, torch_requirement
from cs336_harness.paths import REPO_ROOT

# Under serverFilesCourse/ in the course repository, and so under /grade/serverFilesCourse/
# in the container.
PACKAGE = "cs336"
ENTRYPOINT = "run_prairielearn"
SECRET_FILE = "inputs_secret"
QUESTION = "cs336_assignment1"
# Where the image keeps the environment.
VENV = "/opt/cs336/.venv"
# PrairieLearn's most for externalGradingOptions.timeout, in seconds; the grader's own
# deadline leaves the container's start, the interpreter's and results.json this margin.
MOST_SECONDS = 600
MARGIN = 30
PER_VARIANT, PER_SUBMISSION = "per-variant", "per-submission"
INPUTS = (PER_VARIANT, PER_SUBMISSION)

RUN = """\
#!/usr/bin/env bash
# PrairieLearn runs this for every submission to the question (its
# externalGradingOptions.entrypoint), as the image's user (root), in a fresh container of
# the course's image, with /grade filled: it grades /grade/student and writes
# /grade/results/results.json. Written by `cs336-grade prairielearn`, with its options.
# Elsewhere, CS336_GRADE_ROOT replaces /grade and CS336_PYTHON the image's interpreter.
set -euo pipefail
cd "$(dirname "$0")"
# `-m` puts this directory first on the import path: the harness that grades is this copy.
exec "${{CS336_PYTHON:-{venv}/bin/python}}" \\
  -m cs336_harness.grading.prairielearn.run_prairielearn {own}"${{CS336_GRADE_ROOT:-/grade}}" \\
  {options}
"""

DOCKERFILE = """\
# The image PrairieLearn's external grader starts for every submission to the assignment:
# the environment of {course}, and nothing of the course's grading code, which comes
# with every job in /grade/serverFilesCourse/{package} (images on Docker Hub are public).
# Written by `cs336-grade prairielearn`; build it in this folder and push it under the
# name the question's info.json gives:
#   docker build -t {image} . && docker push {image}
FROM python:{python}-slim-bookworm
ENV UV_NO_CACHE=1 UV_PYTHON_PREFERENCE=only-system
RUN pip install --no-cache-dir "uv=={uv}"
WORKDIR /opt/cs336
COPY pyproject.toml uv.lock ./
# uv.lock's versions of everything but torch, then the course's torch as PyTorch's CPU-only
# build; bytecode now, as graded processes write none. Every user may read and run it: the
# sandbox runs each submission's code as a user of its own.
RUN uv export --frozen --no-dev --no-emit-project --no-hashes --no-header --no-annotate \\
      --prune torch --output-file requirements.txt \\
 && uv venv --python /usr/local/bin/python{python} {venv} \\
 && uv pip install --no-config --python {venv}/bin/python --compile-bytecode \\
      --torch-backend cpu -r requirements.txt {torch} \\
 && rm requirements.txt
"""

QUESTION_HTML = """\
<pl-question-panel>
  <p>
    Upload your assignment 1 as one zip: the one <code>make_submission.sh</code> writes, or
    any zip of your <code>cs336_basics/</code> folder and <code>tests/adapters.py</code>.
    It is graded on inputs drawn for you, the same for every resubmission.
  </p>
  <pl-file-upload file-patterns="*.zip"></pl-file-upload>
</pl-question-panel>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
</pl-submission-panel>
"""

README = """\
# CS336 assignment 1 on PrairieLearn

Written by `cs336-grade prairielearn` from the cs336-basics harness
(its docs/grading.md, "On PrairieLearn"). Copy `serverFilesCourse/{package}/` and
`questions/{question}/` into the course repository; build the image in `image/` and push it
to Docker Hub as `{image}` (the name info.json gives). Each submission is graded with
these options: {options}

For staff only: `serverFilesCourse/{package}/` holds the oracle, the fixture generator and
the secret the inputs are drawn from. PrairieLearn copies it into each grading job and never
shows it to students; keep it out of clientFiles and of anything public.
"""


@dataclass(frozen=True)
class Question:
    """The course's choices for the question and its image."""

    course: Course
    image: str
    timeout: float = MOST_SECONDS
    inputs: str = PER_VARIANT
    secret: str | None = None
    question_uuid: str = ""

    def deadline(self) -> float:
        return max(self.timeout - MARGIN, self.timeout / 2)

    def info(self) -> dict[str, object]:
        """info.json: a v3 question graded externally, one variant per student."""
        return {
            "uuid": self.question_uuid or str(uuid.uuid4()),
            "type": "v3",
            "title": "Assignment 1: a Transformer language model from scratch",
            "topic": "Assignment 1",
            "singleVariant": True,
            "gradingMethod": "External",
            "externalGradingOptions": {
                "image": self.image,
                "entrypoint": f"/grade/serverFilesCourse/{PACKAGE}/{ENTRYPOINT}",
                "serverFilesCourse": [f"{PACKAGE}/"],
                "timeout": int(self.timeout),
                "enableNetworking": False,
            },
        }


def build(
    dest: Path, rubric: Path, options: list[str], question: Question, repo: Path = REPO_ROOT
) -> None:
    """Write the course's files into `dest` (a new or empty folder): the package grading
    with cs336-grade's `options`, the question, the image's recipe."""
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty: write the course's files into a new folder")
    package = dest / "serverFilesCourse" / PACKAGE
    package.mkdir(parents=True)
    stage(package, rubric, repo)
    own = f"--per-variant {SECRET_FILE} " if question.inputs == PER_VARIANT else ""
    arguments = [*options, f"--deadline={question.deadline():g}"]
    run = package / ENTRYPOINT
    run.write_text(RUN.format(venv=VENV, own=own, options=shlex.join(arguments)))
    run.chmod(0o755)
    if question.inputs == PER_VARIANT:
        secret = package / SECRET_FILE
        secret.write_text(f"{question.secret}\n")
        secret.chmod(0o600)
    folder = dest / "questions" / QUESTION
    folder.mkdir(parents=True)
    (folder / "info.json").write_text(json.dumps(question.info(), indent=2) + "\n")
    (folder / "question.html").write_text(QUESTION_HTML)
    image = dest / "image"
    image.mkdir()
    for name in ("pyproject.toml", "uv.lock"):
        shutil.copyfile(repo / name, image / name)
    course = question.course
    (image / "Dockerfile").write_text(
        DOCKERFILE.format(
            course=course.describe(),
            package=PACKAGE,
            image=question.image,
            python=course.python,
            uv=UV_VERSION,
            venv=VENV,
            torch=shlex.quote(torch_requirement(course, repo)),
        )
    )
    (dest / "README.md").write_text(
        README.format(
            package=PACKAGE, question=QUESTION, image=question.image, options=shlex.join(arguments)
        )
    )
