"""Grade every synthetic submission in one run and check each report: points, verdicts,
fixtures intact, every test accounted for. See `synthetic.py` for what each one does."""

from __future__ import annotations

import pytest

from cs336_harness.adapter_loader import REPO_ROOT
from cs336_harness.grading.trusted import has_family_marker
from cs336_harness.manifest import manifest_problems
from tests.grading.conftest import FAIL_UNDER, HOSTILE, GradingRun, family_statuses, statuses

pytestmark = pytest.mark.grading


def _points_lost(run: GradingRun, name: str) -> float:
    results = run.results(name)
    return results["max_score"] - results["score"]


def _others_passed(run: GradingRun, name: str, families: set[str]) -> bool:
    return all(
        t["extra_data"]["status"] == "passed"
        for t in run.results(name)["tests"]
        if t["extra_data"]["family"] not in families
    )


def _outputs(run: GradingRun, name: str, nodeid_part: str) -> list[str]:
    return [
        t["output"] for t in run.results(name)["tests"] if nodeid_part in t["extra_data"]["nodeid"]
    ]


def test_grading_completes_and_gates_on_fail_under(hostile_batch: GradingRun):
    assert hostile_batch.returncode == 1, hostile_batch.stderr
    assert f"below --fail-under {FAIL_UNDER}%" in hostile_batch.stderr
    assert "exit_at_import" in hostile_batch.stderr


def test_every_submission_reports_every_test(hostile_batch: GradingRun, pytester: pytest.Pytester):
    # What a test run of the repository itself collects from the family test files.
    family_files = [
        str(p) for p in sorted((REPO_ROOT / "tests").glob("test_*.py")) if has_family_marker(p)
    ]
    items, _ = pytester.inline_genitems(*family_files, "-p", "no:cacheprovider")
    universe = {item.nodeid for item in items}
    assert len(universe) > 50
    for name in HOSTILE:
        reported = [t["extra_data"]["nodeid"] for t in hostile_batch.results(name)["tests"]]
        assert sorted(reported) == sorted(universe), name
    assert set(hostile_batch.summary()) == set(HOSTILE)
    suites = hostile_batch.junit().findall("testsuite")
    assert sorted(s.get("name") for s in suites) == sorted(HOSTILE)
    assert all(len(s.findall("testcase")) == len(universe) for s in suites)


def test_the_correct_submission_gets_every_point(hostile_batch: GradingRun):
    results = hostile_batch.results("correct")
    assert results["score"] == results["max_score"] >= 23
    assert set(statuses(results).values()) == {"passed"}


def test_one_wrong_component_loses_its_family_only(hostile_batch: GradingRun):
    assert family_statuses(hostile_batch.results("wrong_softmax"), "softmax") == {
        "passed",
        "failed",
    }
    assert _points_lost(hostile_batch, "wrong_softmax") == 1
    assert _others_passed(hostile_batch, "wrong_softmax", {"softmax"})
    assert any(
        "differs from the oracle" in o for o in _outputs(hostile_batch, "wrong_softmax", "softmax")
    )


def test_missing_and_unimplemented_adapters_are_not_implemented(hostile_batch: GradingRun):
    results = hostile_batch.results("not_implemented")
    assert family_statuses(results, "linear") == {"not implemented"}
    assert family_statuses(results, "rope") == {"not implemented"}
    assert _points_lost(hostile_batch, "not_implemented") == 1 + 2
    assert _others_passed(hostile_batch, "not_implemented", {"linear", "rope"})
    assert all(
        o.startswith("not implemented: run_linear")
        for o in _outputs(hostile_batch, "not_implemented", "test_linear")
    )


def test_hangs_time_out_in_python_and_in_c(hostile_batch: GradingRun):
    results = hostile_batch.results("hangs")
    verdicts = statuses(results)
    assert family_statuses(results, "silu") == {"timed out"}
    assert all("Timeout" in o for o in _outputs(hostile_batch, "hangs", "test_silu"))
    assert verdicts["tests/test_embedding.py::test_embedding[three_dim_ids]"] == "timed out"
    assert verdicts["tests/test_embedding.py::test_embedding[reference]"] == "passed"
    [deadlock] = _outputs(hostile_batch, "hangs", "test_embedding[three_dim_ids]")
    assert "could not interrupt" in deadlock
    assert _points_lost(hostile_batch, "hangs") == 1 + 1
    assert hostile_batch.summary()["hangs"]["test_processes"] == "2"
    assert _others_passed(hostile_batch, "hangs", {"silu", "embedding"})


def test_a_crash_loses_only_the_test_that_crashed(hostile_batch: GradingRun):
    verdicts = statuses(hostile_batch.results("crashes"))
    assert verdicts["tests/test_swiglu.py::test_swiglu[d_ff_40]"] == "crashed"
    assert verdicts["tests/test_swiglu.py::test_swiglu[reference]"] == "passed"
    assert verdicts["tests/test_silu.py::test_silu[large_magnitude]"] == "crashed"
    assert verdicts["tests/test_silu.py::test_silu[leading_dims]"] == "passed"
    [segfault] = _outputs(hostile_batch, "crashes", "test_swiglu[d_ff_40]")
    [abort] = _outputs(hostile_batch, "crashes", "test_silu[large_magnitude]")
    assert "SIGSEGV" in segfault and "SIGABRT" in abort
    assert _points_lost(hostile_batch, "crashes") == 2 + 1
    assert _others_passed(hostile_batch, "crashes", {"swiglu", "silu"})
    suite = next(
        s for s in hostile_batch.junit().findall("testsuite") if s.get("name") == "crashes"
    )
    assert suite.get("errors") == "2"
    assert hostile_batch.summary()["crashes"]["test_processes"] == "3"


@pytest.mark.parametrize(
    ("name", "status", "clue"),
    [
        ("exit_at_import", "error", "SystemExit: 3"),
        ("hard_exit_at_import", "error", "exited with code 7"),
        ("import_error", "error", "a_module_that_does_not_exist"),
        ("hangs_at_import", "timed out", "hung before reaching this test"),
    ],
)
def test_a_submission_that_cannot_be_imported_scores_zero(
    hostile_batch: GradingRun, name: str, status: str, clue: str
):
    results = hostile_batch.results(name)
    assert results["score"] == 0
    assert set(statuses(results).values()) == {status}
    assert all(clue in t["output"] for t in results["tests"])


def test_printing_10_mb_costs_nothing_and_is_capped(hostile_batch: GradingRun):
    assert _points_lost(hostile_batch, "loud") == 0
    report = hostile_batch.out / "loud" / "results.json"
    assert report.stat().st_size < 200_000


def test_a_memory_hog_fails_its_test_at_the_limit(hostile_batch: GradingRun):
    results = hostile_batch.results("memory_hog")
    assert family_statuses(results, "embedding") == {"failed"}
    assert all(
        o.startswith("failed: MemoryError (memory limit: 2 GiB)")
        for o in _outputs(hostile_batch, "memory_hog", "test_embedding")
    )
    assert _others_passed(hostile_batch, "memory_hog", {"embedding"})


def test_rewriting_a_fixture_voids_the_run_and_spares_the_trusted_copy(hostile_batch: GradingRun):
    results = hostile_batch.results("tampers")
    assert results["score"] == 0
    assert set(statuses(results).values()) == {"tampered"}
    assert "fixtures/silu.safetensors was modified" in results["tests"][0]["output"]
    assert manifest_problems(REPO_ROOT / "tests" / "fixtures") == []


def test_returning_stored_outputs_passes_on_the_stored_fixtures(hostile_batch: GradingRun):
    # The attack works here; test_fresh_inputs shows --fresh-inputs defeating it.
    assert family_statuses(hostile_batch.results("cheats"), "silu") == {"passed"}


def test_the_terminal_table_lists_every_submission(hostile_batch: GradingRun):
    assert all(name[:12] in hostile_batch.stdout for name in HOSTILE)
