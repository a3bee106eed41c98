"""Reports of a grading run: Gradescope's results.json, GitHub Classroom's reporter input,
PrairieLearn's results.json, JUnit XML, a CSV summary, terminal tables, `grading.json` (what
`cs336-grade merge` combines shards from) and, for a class, the class report; every one says
how the run was made (`RunInfo`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from cs336_harness.grading.reports import classroom, prairielearn
from cs336_harness.grading.reports.archive import write_archive
from cs336_harness.grading.reports.checked import write_json
from cs336_harness.grading.reports.class_report import write_class_report
from cs336_harness.grading.reports.gradescope import results_json
from cs336_harness.grading.reports.junit import write_junit
from cs336_harness.grading.reports.summary import write_summary
from cs336_harness.grading.results import SubmissionResult
from cs336_harness.grading.scoring import Rubric, Score

# Each submission's GitHub Classroom runners' results, and its PrairieLearn results.json.
CLASSROOM, PRAIRIELEARN = "classroom.json", "prairielearn.json"


@dataclass(frozen=True)
class RunInfo:
    """How a grading run was made: the same for every submission it graded."""

    sandbox: str
    inputs: str
    # The seed the inputs were drawn for; None: the stored fixtures.
    seed: int | None
    partial: bool
    # `--visibility`, over the rubric's `[gradescope]` one; None: the rubric's.
    visibility: str | None
    # Submissions in the whole class (all shards): it decides the layout of the reports.
    class_size: int
    shard: str = "1/1"
    # What bounds each worker's memory, processes and CPU (`cgroups.Cgroups.description`).
    resources: str = ""
    # results.json for students to read (`--for-students`, the autograder's): how the run
    # was made and the trusted processes' logs go to staff (the terminal, `extra_data`),
    # not into its output.
    for_students: bool = False
    # The grader's Python and packages, and each submission's limits (`run_environment`).
    environment: str = ""
    limits: str = ""

    def lines(self, submission: SubmissionResult | None = None) -> list[str]:
        """The run's lines, or one submission's (whose inputs may be its own)."""
        inputs = submission.inputs if submission is not None and submission.inputs else self.inputs
        # The inputs stay the second line: CI scripts read the seed from there.
        resources = [f"resources: {self.resources}"] if self.resources else []
        environment = [f"environment: {self.environment}"] if self.environment else []
        return [f"sandbox: {self.sandbox}", f"inputs: {inputs}", *resources, *environment]

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def write_reports(
    results: list[Score],
    out: Path,
    info: RunInfo,
    rubric: Rubric,
    positions: list[int] | None = None,
) -> list[str]:
    """Write every report; return what was written, relative to `out`, for the terminal.
    `rubric`: its settings for results.json (`info.visibility` overrides its visibility)
    and for GitHub Classroom; `positions`: each submission's place in the class (default:
    as listed)."""
    gradescope = rubric.gradescope
    if info.visibility is not None:
        gradescope = replace(gradescope, visibility=info.visibility)
    out.mkdir(parents=True, exist_ok=True)
    one = info.class_size == 1
    for result in results:
        directory = out if one else out / result.submission.name
        directory.mkdir(parents=True, exist_ok=True)
        lines = info.lines(result.submission)
        report = results_json(result, gradescope, lines, info.for_students)
        write_json(directory / "results.json", report, indent=2)
        write_json(directory / CLASSROOM, classroom.runner_results(result, rubric), indent=2)
        learn = prairielearn.results(result, lines, info.for_students)
        write_json(directory / PRAIRIELEARN, learn, indent=2)
    write_junit(results, out / "junit.xml", info.to_dict())
    places = positions if positions is not None else list(range(len(results)))
    write_archive(results, out / "grading.json", info.to_dict(), places)
    own = ["results.json", CLASSROOM, PRAIRIELEARN]
    if one:
        return [*own, "junit.xml", "grading.json"]
    write_summary(results, out / "summary.csv", info.sandbox, info.seed, info.environment)
    report = write_class_report(results, out, info.to_dict())
    mine = [f"<submission>/{name}" for name in own]
    return [*mine, "junit.xml", "summary.csv", "grading.json", *report]
