"""Fresh inputs, the default when grading submissions: a seed drawn for the run, written in
every report, the same inputs and scores when a run is regraded with `--seed`."""

import csv

import pytest

from tests.grading import synthetic
from tests.grading.conftest import GradingRun, grade, statuses


@pytest.fixture(scope="module")
def fresh_run(tmp_path_factory: pytest.TempPathFactory) -> GradingRun:
    root = tmp_path_factory.mktemp("fresh")
    synthetic.write_submission(root / "submissions" / "correct", synthetic.CORRECT)
    synthetic.write_submission(root / "submissions" / "cheats", synthetic.CHEATS)
    return grade(root / "submissions", "-j2", out=root / "out", draw=True)


def _seed(run: GradingRun) -> str:
    return run.summary()["correct"]["seed"]


def test_a_run_draws_its_seed_and_every_report_names_it(fresh_run: GradingRun):
    assert fresh_run.returncode == 0, fresh_run.stderr
    seed = _seed(fresh_run)
    assert seed.isdigit()
    line = f"inputs: fresh, drawn for seed {seed} (regrade on the same inputs: --seed {seed})"
    assert fresh_run.results("correct")["output"].splitlines()[1] == line
    assert line in fresh_run.stdout
    properties = fresh_run.junit().find("testsuite/properties")
    assert {p.get("name"): p.get("value") for p in properties}["seed"] == seed


def test_a_correct_submission_passes_fresh_inputs(fresh_run: GradingRun):
    results = fresh_run.results("correct")
    assert results["score"] == results["max_score"] >= 23, f"seed {_seed(fresh_run)}"


def test_fresh_inputs_defeat_returning_stored_outputs(fresh_run: GradingRun):
    results = fresh_run.results("cheats")
    # silu's large_magnitude case is a fixed grid, the same for every seed; its other cases
    # are drawn anew, and each failed one costs its share of the family's point.
    silu = [
        t
        for t in results["tests"]
        if t["extra_data"]["family"] == "silu" and t["extra_data"]["kind"] == "contract"
    ]
    failed = sum(t["status"] == "failed" for t in silu)
    assert failed and results["max_score"] - results["score"] == pytest.approx(failed / len(silu))
    assert len(statuses(results)) == len(statuses(fresh_run.results("correct")))


def test_regrading_with_the_seed_gives_the_same_scores(fresh_run: GradingRun, tmp_path):
    submissions = fresh_run.out.parent / "submissions"
    again = grade(submissions, "-j2", f"--seed={_seed(fresh_run)}", out=tmp_path / "again")
    assert again.returncode == 0, again.stderr

    def rows(run: GradingRun) -> list[dict[str, str]]:
        with (run.out / "summary.csv").open() as f:
            return [{k: v for k, v in r.items() if k != "seconds"} for r in csv.DictReader(f)]

    assert rows(again) == rows(fresh_run)
