"""`cs336-grade classroom`: the GitHub Actions workflow a course puts in its GitHub Classroom
template repository (`.github/workflows/classroom.yml`): on every push it checks the
student's repository out, installs the course's environment from its uv.lock, grades it on
the stored fixtures (`grading/classroom/run_classroom.py`) and hands each runner's result to
GitHub Classroom's autograding reporter (docs/grading.md, "On GitHub Classroom")."""

from __future__ import annotations

import shlex

from cs336_harness.grading.packaging.autograder import UV_VERSION
from cs336_harness.grading.reports.classroom import runner_names
from cs336_harness.grading.scoring import Rubric

# The reporter, as Classroom's own workflows name it (its v1 release).
REPORTER = "classroom-resources/autograding-grading-reporter@v1"
# The job's limit: the environment's install and the grading, with room for a slow runner.
TIMEOUT_MINUTES = 30

WORKFLOW = """\
# Written by `cs336-grade classroom` from the course's rubric; regenerate it when the rubric's
# families or [classroom] runners change (docs/grading.md, "On GitHub Classroom").
#
# It grades the student's own repository with the grader and tests in it, on the stored
# fixtures, which the student has: feedback on every push, the same inputs every time.
# The student can edit this file, and so the points: the grade of record comes from staff
# grading the class's repositories on inputs of their own.
name: Autograding Tests
on: [push, workflow_dispatch, repository_dispatch]
permissions:
  actions: read
  contents: read
jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    # Classroom's own first commit of the repository is not a submission.
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: {timeout}
    steps:
      - name: Check out the student's repository
        uses: actions/checkout@v4
      - name: Install uv
        uses: astral-sh/setup-uv@v6
        with:
          version: "{uv}"
      # The course's Python and packages (uv.lock's, without the harness's own dev tools).
      - name: Install the course's environment (uv.lock) and the grader's sandbox
        run: |
          sudo apt-get update -qq && sudo apt-get install -y -qq bubblewrap
          uv sync --locked --no-dev --compile-bytecode
      # As root: Ubuntu's runners refuse the sandbox's namespaces to other users.
      - name: Grade
        id: grade
        run: >-
          sudo -E env "PATH=$PATH" .venv/bin/python
          -m cs336_harness.grading.classroom.run_classroom . --stored-inputs{options}
      - name: Report to GitHub Classroom
        if: always()
        uses: {reporter}
        env:
{env}
        with:
          runners: {runners}
      - name: Keep the reports
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: grading
          path: grading
"""


def workflow(rubric: Rubric, options: list[str]) -> str:
    """The workflow for `rubric`'s runners, grading with cs336-grade's `options`."""
    names = runner_names(rubric)
    env = "\n".join(
        f'          {name.upper()}_RESULTS: "${{{{ steps.grade.outputs.{name} }}}}"'
        for name in names
    )
    return WORKFLOW.format(
        timeout=TIMEOUT_MINUTES,
        uv=UV_VERSION,
        options="".join(f" {shlex.quote(option)}" for option in options),
        reporter=REPORTER,
        env=env,
        runners=",".join(names),
    )
