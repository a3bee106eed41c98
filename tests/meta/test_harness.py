"""The harness's own promises: how the adapters module is chosen, what a missing or broken one
looks like, and that a modified fixture stops the session. Each test runs a small pytest
session inside this one (pytester), so they are marked `meta` and run by `make meta`."""

from __future__ import annotations

import shutil
from fnmatch import fnmatchcase
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
FAMILIES = TESTS / "families"
TWO_FAMILIES = [str(FAMILIES / "test_silu.py"), str(FAMILIES / "test_softmax.py")]


def outcomes(recorder: pytest.HookRecorder) -> dict[str, list[str]]:
    """Failure message (first line) per failing test id; passes map to []."""
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    return {
        r.nodeid.split("::")[-1]: (str(r.longrepr).splitlines() if r.failed else [])
        for r in reports
    }


def write_module(directory: Path, body: str) -> Path:
    path = directory / "partial_adapters.py"
    path.write_text(body)
    return path


def test_missing_or_not_implemented_function_fails_only_its_family(pytester):
    module = write_module(
        pytester.path,
        "from tests.adapters import run_softmax  # noqa: F401\n",  # no run_silu at all
    )
    result = outcomes(pytester.inline_run(*TWO_FAMILIES, f"--adapters={module}"))
    silu = {k: v for k, v in result.items() if k.startswith("test_silu")}
    softmax = {k: v for k, v in result.items() if k.startswith("test_softmax")}
    assert silu and all(v == ["not implemented: run_silu"] for v in silu.values()), silu
    assert softmax and all(v == [] for v in softmax.values()), softmax


def test_not_implemented_error_gives_the_same_one_line(pytester, monkeypatch):
    module = write_module(
        pytester.path,
        "from tests.adapters import run_silu  # noqa: F401\n"
        "def run_softmax(in_features, dim):\n    raise NotImplementedError\n",
    )
    monkeypatch.setenv("CS336_ADAPTERS", str(module))  # the environment variable route
    result = outcomes(pytester.inline_run(*TWO_FAMILIES))
    failed = {k: v for k, v in result.items() if v}
    assert failed and set(failed) == {k for k in result if k.startswith("test_softmax")}
    assert all(v == ["not implemented: run_softmax"] for v in failed.values())


# Adapters written over code that is not: a NotImplementedError raised below SiLU's adapter
# (called directly, and by the backward test's probe) and below the clipping adapter (which
# only a probe calls); softmax's adapter is a stub itself.
UNFINISHED = """\
import torch


class SiLU(torch.nn.Module):
    def forward(self, x):
        raise NotImplementedError


def run_silu(in_features):
    return SiLU()(in_features)


def run_softmax(in_features, dim):
    raise NotImplementedError


def run_gradient_clipping(parameters, max_l2_norm):
    return _global_norm(parameters)


def _global_norm(parameters):
    raise NotImplementedError
"""


def test_a_not_implemented_error_below_the_adapter_says_where(pytester):
    module = write_module(pytester.path, UNFINISHED)
    clipping = str(TESTS / "families" / "test_gradient_clipping.py")
    result = outcomes(pytester.inline_run(*TWO_FAMILIES, clipping, f"--adapters={module}"))
    clipping_line = (
        "not implemented: run_gradient_clipping → `_global_norm` in partial_adapters.py:22 "
        "raised NotImplementedError"
    )
    line = {
        "test_silu": "not implemented: run_silu → `SiLU.forward` in partial_adapters.py:6 "
        "raised NotImplementedError",
        "test_softmax": "not implemented: run_softmax",
        "test_gradient_clipping": clipping_line,
        "test_gradient_clipping_given_a_generator": clipping_line,
    }
    assert {test.partition("[")[0] for test in result} == {
        *line,
        "test_silu_backward",
        "test_softmax_backward",
    }
    for test, lines in result.items():
        assert lines == [line[test.partition("[")[0].removesuffix("_backward")]], test


def test_option_beats_environment_and_takes_dotted_names(pytester, monkeypatch):
    monkeypatch.setenv("CS336_ADAPTERS", str(write_module(pytester.path, "")))
    result = outcomes(pytester.inline_run(*TWO_FAMILIES, "--adapters=tests.evidence.fused"))
    assert result and all(v == [] for v in result.values())


@pytest.mark.parametrize(
    ("body", "spec", "line"),
    [
        pytest.param(
            None, "{dir}/missing.py", "no adapters file at {dir}/missing.py", id="missing"
        ),
        pytest.param(
            None,
            "tests.no_such_adapters",
            "adapters 'tests.no_such_adapters' is no importable module "
            "(No module named 'tests.no_such_adapters'); a file is named by its path",
            id="not_a_module",
        ),
        pytest.param(
            "x = 1\ndef run_silu(:\n",
            "{module}",
            "cannot import adapters '{module}': SyntaxError: * (partial_adapters.py, line 2)",
            id="syntax_error",
        ),
        pytest.param(
            "def helper():\n    raise RuntimeError('no GPU')\n\n\nhelper()\n",
            "{module}",
            "cannot import adapters '{module}': RuntimeError: no GPU (at {module}:2)",
            id="raises",
        ),
        pytest.param(
            "import sys\nsys.exit('refusing to load')\n",
            "{module}",
            "cannot import adapters '{module}': SystemExit: refusing to load (at {module}:2)",
            id="sys_exit",
        ),
    ],
)
def test_unusable_adapters_stop_the_session_with_one_line(pytester, body, spec, line):
    module = pytester.path / "partial_adapters.py"
    if body is not None:
        write_module(pytester.path, body)
    spec, line = (text.format(dir=pytester.path, module=module) for text in (spec, line))
    result = pytester.runpytest_inprocess(*TWO_FAMILIES, f"--adapters={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [text for text in result.errlines if text]
    assert len(errors) == 1 and fnmatchcase(errors[0], f"ERROR: cs336: {line}"), errors
    assert not "".join(result.outlines).strip()  # stopped before collecting: no test ran


def test_a_modified_fixture_stops_the_session_naming_the_file(pytester):
    fixtures = pytester.path / "fixtures"
    shutil.copytree(TESTS / "fixtures", fixtures)
    target = fixtures / "silu.safetensors"
    data = bytearray(target.read_bytes())
    data[-1] ^= 1
    target.write_bytes(bytes(data))
    result = pytester.runpytest_inprocess(*TWO_FAMILIES, f"--fixtures-dir={fixtures}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*refusing to run on modified fixtures*"])
    result.stderr.fnmatch_lines([f"*{target} was modified*"])
    assert "passed" not in result.stdout.str()  # the session stopped before any test ran


@pytest.mark.parametrize(
    ("module", "marker"),
    [("grading/test_untrusted_text.py", "grading"), ("meta/test_typecheck.py", "meta")],
)
def test_a_marked_folder_marks_its_tests(pytester, module, marker):
    # tests/conftest.py marks them by where they live; `-m "not grading and not meta"` (the
    # everyday suite) must then leave every one out.
    items, _ = pytester.inline_genitems(str(TESTS / module))
    assert items and all(item.get_closest_marker(marker) for item in items)
    items, _ = pytester.inline_genitems(str(TESTS / "harness" / "test_docs.py"))
    assert items and not any(item.get_closest_marker(marker) for item in items)


@pytest.mark.parametrize(
    ("markexpr", "skipped"),
    [
        ("not meta and not grading", True),
        ("not (grading or meta)", True),
        ("not(grading)", True),
        ("grading", False),
        ("meta", False),  # a grading test may also be marked meta
        ("meta or not grading", False),
        ("not grading or hardening", False),
        ('not grading and not family(name="x")', False),  # marker arguments: not analysed
        ("", False),
    ],
)
def test_the_grading_folder_is_skipped_only_when_m_leaves_none_of_it(markexpr, skipped):
    from tests.conftest import deselects_every

    assert deselects_every(markexpr, "grading") is skipped


@pytest.mark.parametrize("stub", ["run_save_checkpoint", "run_load_checkpoint"])
def test_a_stubbed_checkpoint_adapter_fails_before_the_training(stub, monkeypatch):
    from cs336_harness.adapters.probes import checkpoint, registry
    from tests import adapters

    class Stubbed:
        def __getattr__(self, name):
            if name == stub:

                def stubbed(*args, **kwargs):
                    raise NotImplementedError

                return stubbed
            return getattr(adapters, name)

    trained = []
    monkeypatch.setattr(checkpoint, "_train", lambda *args: trained.append(args))
    params = dict(seed=0, steps_before=2, steps_after=2, target="path")
    with pytest.raises(NotImplementedError):
        registry.run_probe(Stubbed(), "checkpoint_resume", params)
    assert trained == []


def test_a_failing_hardening_test_says_so_first_and_a_contract_one_does_not(pytester):
    attention = str(TESTS / "families" / "test_scaled_dot_product_attention.py")
    wrong = TESTS / "evidence" / "wrong"
    hardening = outcomes(
        pytester.inline_run(
            attention, f"--adapters={wrong / 'attention_nan_on_fully_masked_row.py'}"
        )
    )
    contract = outcomes(
        pytester.inline_run(attention, f"--adapters={wrong / 'attention_no_scale.py'}")
    )
    failed = {k: v for k, v in hardening.items() if v}
    assert list(failed) == ["test_scaled_dot_product_attention[4d_fully_masked_row]"], failed
    assert failed[next(iter(failed))][0].startswith("hardening: stricter than the assignment")
    # Calls upstream never makes (mask=None, a broadcast mask) are hardening too.
    calls = {"3d_no_mask", "4d_causal_mask", "4d_fully_masked_row"}
    marked = {k for k, v in contract.items() if v and v[0].startswith("hardening")}
    assert marked == {f"test_scaled_dot_product_attention[{c}]" for c in calls}, marked
    first_lines = [v[0] for k, v in contract.items() if v and k not in marked]
    assert first_lines and not any(line.startswith("hardening") for line in first_lines)


def _silu_from_torch(adapters: Path) -> Path:
    """An adapters file at `adapters` whose SiLU calls torch's (line 4)."""
    adapters.parent.mkdir(parents=True)
    adapters.write_text(
        "from tests.adapters import *  # noqa: F403\n"
        "import torch.nn.functional as F\n"
        "def run_silu(in_features):\n"
        "    return F.silu(in_features)\n"
    )
    return adapters


def test_rules_lists_each_forbidden_use_with_its_line(pytester):
    adapters = _silu_from_torch(pytester.path / "submission" / "tests" / "adapters.py")
    result = pytester.runpytest(TWO_FAMILIES[0], "--rules", f"--adapters={adapters}")
    finding = "forbidden: tests/adapters.py:4: torch.nn.functional.silu"
    # And seen at run time, with the family of the tests that called it.
    called = "called: silu: tests/adapters.py:4: torch.nn.functional.silu (* torch call*)"
    result.stdout.fnmatch_lines(["*the assignment's rules*", finding, "*calls seen*", called])
    assert result.ret == 0  # reported, not failed: the rubric decides what a use costs


def test_rules_reads_the_adapters_file_under_test_whatever_its_name(pytester):
    adapters = _silu_from_torch(pytester.path / "submission" / "tests" / "my_adapters.py")
    result = pytester.runpytest(TWO_FAMILIES[0], "--rules", f"--adapters={adapters}")
    # The static reading and the watcher agree on the file: the one --adapters names.
    result.stdout.fnmatch_lines(["forbidden: tests/my_adapters.py:4: torch.nn.functional.silu"])


def test_a_family_marker_names_a_registered_family(pytester):
    pytester.makepyfile(
        test_typo='import pytest\n\n\n@pytest.mark.family("ropee")\ndef test_x():\n    pass\n'
    )
    result = pytester.runpytest_inprocess("-p", "cs336_harness.judging.pytest_plugin")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    result.stdout.fnmatch_lines(["*no test family 'ropee'*cs336_harness/families.py*"])
    assert "Traceback" not in result.stdout.str()


def test_a_tokenizer_method_that_raises_fails_its_own_test_alone(pytester):
    # A real one: encode_iterable calls next() on the file first, which an empty file ends.
    module = write_module(
        pytester.path,
        "from cs336_basics.tokenizer import Tokenizer\n"
        "from tests.adapters import *  # noqa: F403\n"
        "class FirstLineFirst(Tokenizer):\n"
        "    def encode_iterable(self, iterable):\n"
        "        lines = iter(iterable)\n"
        "        text = next(lines)\n"
        "        yield from self.encode(text + ''.join(lines))\n"
        "def get_tokenizer(vocab, merges, special_tokens=None):\n"
        "    return FirstLineFirst(vocab, merges, special_tokens)\n",
    )
    tokenizer_tests = str(FAMILIES / "test_tokenizer.py")
    result = outcomes(
        pytester.inline_run(
            tokenizer_tests, f"--adapters={module}", "-m", "not hardening and not efficiency"
        )
    )
    failed = {k: v for k, v in result.items() if v}
    assert failed and all(k.startswith("test_encode_iterable[") for k in failed), sorted(failed)
    raised = "raised RuntimeError: generator raised StopIteration"
    assert all(any(raised in line for line in v) for v in failed.values()), failed
