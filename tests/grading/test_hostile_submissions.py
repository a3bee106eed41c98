"""Grade every synthetic submission in one sandboxed run and check each report: points,
verdicts, every test accounted for, and every attack on the verdict worth nothing.
See `synthetic.py` for what each submission does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.manifest import manifest_problems
from cs336_harness.paths import REPO_ROOT
from tests.grading import synthetic
from tests.grading.conftest import (
    ATTACKS,
    FAIL_UNDER,
    HANG_TIMEOUT,
    HOSTILE,
    GradingRun,
    HostileBatch,
    family_statuses,
    statuses,
)

# Its verdicts depend on a quiet host (load, wall-clock caps, deadlines): `make
# test-grading` runs it after the others, alone.
pytestmark = pytest.mark.alone


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


def test_grading_completes_and_gates_on_fail_under(hostile_batch: HostileBatch):
    run = hostile_batch.run
    assert run.returncode == 1, run.stderr
    assert f"below --fail-under {FAIL_UNDER}%" in run.stderr
    assert "exit_at_import" in run.stderr


def test_every_submission_reports_every_test(
    hostile_batch: HostileBatch, pytester: pytest.Pytester
):
    run = hostile_batch.run
    # What a test run of the repository itself collects from the family test files.
    family_files = [str(p) for p in sorted((REPO_ROOT / "tests" / "families").glob("test_*.py"))]
    items, _ = pytester.inline_genitems(*family_files, "-p", "no:cacheprovider")
    universe = {item.nodeid for item in items}
    assert len(universe) > 50
    for name in HOSTILE:
        reported = [t["extra_data"]["nodeid"] for t in run.results(name)["tests"]]
        assert sorted(reported) == sorted(universe), name
    assert set(run.summary()) == set(HOSTILE)
    suites = run.junit().findall("testsuite")
    assert sorted(s.get("name") for s in suites) == sorted(HOSTILE)
    assert all(len(s.findall("testcase")) == len(universe) for s in suites)


def test_every_report_says_the_sandbox_was_on(hostile_batch: HostileBatch):
    run = hostile_batch.run
    assert "sandbox: bubblewrap" in run.stdout
    assert {row["sandbox"] for row in run.summary().values()} == {"bubblewrap"}
    assert {row["seed"] for row in run.summary().values()} == {"stored"}
    assert run.results("correct")["output"].startswith("sandbox: bubblewrap")
    properties = run.junit().find("testsuite/properties")
    assert {p.get("name"): p.get("value") for p in properties}["sandbox"] == "bubblewrap"


@pytest.mark.parametrize("name", ["correct", "victim"])
def test_a_correct_submission_gets_every_point(hostile_batch: HostileBatch, name: str):
    results = hostile_batch.run.results(name)
    assert results["score"] == results["max_score"] >= 23
    assert set(statuses(results).values()) == {"passed"}


@pytest.mark.parametrize("name", ATTACKS)
def test_an_attack_on_the_verdict_earns_nothing_for_what_it_attacks(
    hostile_batch: HostileBatch, name: str
):
    run = hostile_batch.run
    attacked = {"softmax", "silu"} if name == "lying_values" else {"softmax"}
    # Its softmax fails, however it fails (wrong, crashed: kills_grader's own group goes).
    assert all(family_statuses(run.results(name), f) - {"passed"} for f in attacked), name
    assert _points_lost(run, name) == len(attacked)
    assert _others_passed(run, name, attacked)


def test_lying_values_are_judged_as_plain_data(hostile_batch: HostileBatch):
    run = hostile_batch.run
    # Compared as the zeros they are: the judge describes the error's shape on its own.
    zeros = "failed: error shape: the output is zero everywhere"
    forward = _outputs(run, "lying_values", "test_softmax[")
    assert forward and all(o.startswith(zeros) for o in forward)
    # Forward tests only: the backward probe runs in the worker, which names the wrong type.
    assert all("no plain-data form" in o for o in _outputs(run, "lying_values", "test_silu["))
    backward = _outputs(run, "lying_values", "test_silu_backward")
    assert backward and all("expected a torch.Tensor, got Anything" in o for o in backward)


def test_an_oversized_reply_is_refused_unread(hostile_batch: HostileBatch):
    outputs = _outputs(hostile_batch.run, "huge_reply", "test_softmax[")
    assert outputs and all("over the limit of 268435456" in o for o in outputs)
    # The backward probe checks the output's shape in the worker and sends back only that.
    backward = _outputs(hostile_batch.run, "huge_reply", "test_softmax_backward")
    assert backward and all("output: shape (78643200,)" in o for o in backward)


def test_nothing_outside_the_sandbox_was_written_or_reached(hostile_batch: HostileBatch):
    assert not hostile_batch.canary.exists()
    assert manifest_problems(REPO_ROOT / "tests" / "fixtures") == []
    submissions = hostile_batch.root / "submissions"
    assert not (submissions / "writes_outside" / "cs336_basics" / "written.txt").exists()
    victim = (submissions / "victim" / "tests" / "adapters.py").read_text()
    assert "sabotaged" not in victim
    assert hostile_batch.listener.accepted == 0


def test_no_process_of_a_submission_outlives_its_grading(hostile_batch: HostileBatch):
    assert hostile_batch.run.returncode == 1
    leftovers = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if synthetic.ORPHAN_MARKER.encode() in cmdline.read_bytes():
                leftovers.append(cmdline.parent.name)
        except OSError:
            continue  # a process that ended while we looked
    assert leftovers == []


def test_one_wrong_component_loses_its_family_only(hostile_batch: HostileBatch):
    run = hostile_batch.run
    assert family_statuses(run.results("wrong_softmax"), "softmax") == {"passed", "failed"}
    assert _points_lost(run, "wrong_softmax") == 1
    assert _others_passed(run, "wrong_softmax", {"softmax"})
    assert any("differs from the oracle" in o for o in _outputs(run, "wrong_softmax", "softmax"))
    # The judge diagnoses from the table the grader wrote: the catalog is not in its bundle.
    cause = "failed: likely cause: softmax exponentiates without subtracting the maximum"
    assert any(o.startswith(cause) for o in _outputs(run, "wrong_softmax", "softmax"))


def test_a_wrong_lm_is_located_by_sublayer(hostile_batch: HostileBatch):
    run = hostile_batch.run
    results = run.results("wrong_lm_ffn")
    # Everything built on the LM class fails with it, and nothing else.
    built_on_the_lm = {
        "transformer_lm",
        "transformer_lm_truncated_input",
        "transformer_lm_from_config",
        "transformer_lm_module",
        "decoding",
    }
    assert all(family_statuses(results, f) - {"passed"} for f in built_on_the_lm)
    assert _others_passed(run, "wrong_lm_ffn", built_on_the_lm)
    # The judge locates it from the traces stored with the fixtures (the oracle is withheld).
    verdicts = {
        t["extra_data"]["nodeid"].split("[")[1].rstrip("]"): t["output"]
        for t in results["tests"]
        if "test_transformer_lm.py::test_transformer_lm[" in t["extra_data"]["nodeid"]
    }
    assert "first difference: layers.1.ffn (its input matched" in verdicts["two_layers_vocab_257"]
    assert "first difference: layers.0.ffn (its input matched" in verdicts["one_layer_one_head"]


def test_missing_and_unimplemented_adapters_are_not_implemented(hostile_batch: HostileBatch):
    run = hostile_batch.run
    results = run.results("not_implemented")
    for family in ("linear", "rope", "silu"):
        assert family_statuses(results, family) == {"not implemented"}
    assert _points_lost(run, "not_implemented") == 1 + 2 + 1
    assert _others_passed(run, "not_implemented", {"linear", "rope", "silu"})
    assert all(
        o.startswith("not implemented: run_linear")
        for o in _outputs(run, "not_implemented", "test_linear")
    )
    # Raised below the adapter: the line says where, found in the sandbox (torch is a
    # library there too) and shown without its /submission.
    below = re.compile(
        r"not implemented: run_silu → `_forward_unimplemented` in torch raised "
        r"NotImplementedError, called from `run_silu` in tests/adapters\.py:\d+"
    )
    silu = _outputs(run, "not_implemented", "test_silu")
    assert silu and all(below.fullmatch(o.splitlines()[0]) for o in silu), silu


def test_hangs_time_out_in_python_and_in_c(hostile_batch: HostileBatch):
    run = hostile_batch.run
    results = run.results("hangs")
    verdicts = statuses(results)
    assert family_statuses(results, "silu") == {"timed out"}
    assert (
        verdicts["tests/families/test_embedding.py::test_embedding[three_dim_ids]"] == "timed out"
    )
    assert verdicts["tests/families/test_embedding.py::test_embedding[reference]"] == "passed"
    # SiLU's point; the 3-D ids are a call upstream never makes, a hardening case, worth none.
    assert _points_lost(run, "hangs") == 1
    assert (
        verdicts["tests/families/test_silu.py::test_silu_backward[backward_leading_dims]"]
        == "timed out"
    )
    assert _others_passed(run, "hangs", {"silu", "embedding"})
    # The deadlock uses no CPU: it runs out of wall-clock time while another submission is
    # graded beside it, so it is graded again alone, and the report says so. A loop in Python
    # is stopped by its CPU limit, unless the host is too busy to give it that much CPU
    # within the call's wall-clock cap: then it is graded again alone too. Which of SiLU's
    # three that is depends on others' load, not on the grader; how many, the note says.
    [(again, still)] = re.findall(
        r"(\d+) test\(s\) ran out of wall-clock time while it was graded beside 1 other "
        r"submission; graded again alone, where (\d+) timed out",
        results["output"],
    )
    assert 1 <= int(again) <= 4 and still == again
    # Each time-out stops its worker; the next call starts a new one. Four time-outs in the
    # first run (SiLU's two forward cases and its backward case, and embedding's 3-D ids),
    # then one worker for each test graded again.
    assert int(run.summary()["hangs"]["workers"]) == 1 + 4 + int(again)
    silu = _outputs(run, "hangs", "test_silu")
    by_cpu = [o for o in silu if f"no answer within {HANG_TIMEOUT} s of CPU time" in o]
    assert len(by_cpu) >= len(silu) - (int(again) - 1), silu
    wall = Limits(test_timeout=HANG_TIMEOUT).call_wall
    by_wall = f"no answer within {wall:g} s of wall-clock time"
    assert all(o in by_cpu or by_wall in o for o in silu), silu
    # Graded alone, a loop needs a quarter of a core to reach its CPU limit: some of them do,
    # unless the CPU limit does not work.
    assert by_cpu, silu


def test_a_crash_loses_only_the_test_that_crashed(hostile_batch: HostileBatch):
    run = hostile_batch.run
    verdicts = statuses(run.results("crashes"))
    assert verdicts["tests/families/test_swiglu.py::test_swiglu[d_ff_40]"] == "crashed"
    assert verdicts["tests/families/test_swiglu.py::test_swiglu[reference]"] == "passed"
    assert verdicts["tests/families/test_silu.py::test_silu[large_magnitude]"] == "crashed"
    assert verdicts["tests/families/test_silu.py::test_silu[leading_dims]"] == "passed"
    [segfault] = _outputs(run, "crashes", "test_swiglu[d_ff_40]")
    [abort] = _outputs(run, "crashes", "test_silu[large_magnitude]")
    assert "SIGSEGV" in segfault and "SIGABRT" in abort
    assert _points_lost(run, "crashes") == 2 + 1
    assert _others_passed(run, "crashes", {"swiglu", "silu"})
    suite = next(s for s in run.junit().findall("testsuite") if s.get("name") == "crashes")
    # SwiGLU's backward case with d_ff 40 crashes too (SiLU has no large-magnitude backward
    # case); each crash costs a worker.
    assert (
        verdicts["tests/families/test_swiglu.py::test_swiglu_backward[backward_d_ff_40]"]
        == "crashed"
    )
    assert suite.get("errors") == "3"
    assert run.summary()["crashes"]["workers"] == str(1 + 3)


# The first line of a synthetic submission's `adapters_tail` (after the bundled adapters and
# a blank line).
_TAIL_LINE = len((REPO_ROOT / "tests" / "adapters.py").read_text().splitlines()) + 2


@pytest.mark.parametrize(
    ("name", "status", "clue"),
    [
        ("exit_at_import", "error", "SystemExit: 3"),
        ("hard_exit_at_import", "error", "exited with code 7"),
        # The line of the submission's code that failed, as a local test run names it.
        (
            "import_error",
            "error",
            "No module named 'cs336_basics.a_module_that_does_not_exist' "
            "(at cs336_basics/__init__.py:1)",
        ),
        ("syntax_error", "error", f"SyntaxError: invalid syntax (adapters.py, line {_TAIL_LINE})"),
        (
            "hangs_at_import",
            "timed out",
            f"importing the adapters: no answer within {HANG_TIMEOUT} s of CPU",
        ),
    ],
)
def test_a_submission_that_cannot_be_imported_scores_zero(
    hostile_batch: HostileBatch, name: str, status: str, clue: str
):
    results = hostile_batch.run.results(name)
    assert results["score"] == 0
    assert set(statuses(results).values()) == {status}
    assert all(clue in t["output"] for t in results["tests"])


def test_printing_10_mb_costs_nothing_and_is_capped(hostile_batch: HostileBatch):
    assert _points_lost(hostile_batch.run, "loud") == 0
    report = hostile_batch.run.out / "loud" / "results.json"
    assert report.stat().st_size < 200_000


def test_a_memory_hog_fails_its_test_at_the_limit(hostile_batch: HostileBatch):
    run = hostile_batch.run
    results = run.results("memory_hog")
    assert family_statuses(results, "embedding") == {"failed"}
    assert all(
        o.startswith("failed: MemoryError (memory limit: 2 GiB)")
        for o in _outputs(run, "memory_hog", "test_embedding")
    )
    assert _others_passed(run, "memory_hog", {"embedding"})


def test_returning_stored_outputs_passes_on_the_stored_fixtures(hostile_batch: HostileBatch):
    # The attack works here; test_fresh_inputs shows the default fresh inputs defeating it.
    assert family_statuses(hostile_batch.run.results("cheats"), "silu") == {"passed"}


def test_the_terminal_table_lists_every_submission(hostile_batch: HostileBatch):
    assert all(name[:12] in hostile_batch.run.stdout for name in HOSTILE)


def _listed(page: str, section: str) -> set[str]:
    """The submissions the class report lists under one of its lists to act on."""
    start = page.index(f'<h3 id="act-{section}">')
    end = page.index("<h3", start + 1)
    return set(re.findall(r'<a href="#s\d+">([^<]*)</a>', page[start:end]))


def test_the_class_report_lists_what_staff_act_on(hostile_batch: HostileBatch):
    page = (hostile_batch.run.out / "report.html").read_text()
    assert {"hangs", "hangs_at_import"} <= _listed(page, "timed-out")
    assert "crashes" in _listed(page, "crashed")
    assert _listed(page, "memory") == {"memory_hog"}
    cannot = {"exit_at_import", "hard_exit_at_import", "import_error", "syntax_error"}
    assert cannot <= _listed(page, "errors")
    assert "memory_hog" not in _listed(page, "errors")
