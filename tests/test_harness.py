"""The harness's own promises: how the adapters module is chosen, what a missing or broken one
looks like, and that a modified fixture stops the session. Each test runs a small pytest
session inside this one (pytester), so they are marked `meta` and run by `make meta`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TWO_FAMILIES = [str(TESTS / "test_silu.py"), str(TESTS / "test_softmax.py")]
pytestmark = pytest.mark.meta


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


def test_option_beats_environment_and_takes_dotted_names(pytester, monkeypatch):
    monkeypatch.setenv("CS336_ADAPTERS", str(write_module(pytester.path, "")))
    result = outcomes(pytester.inline_run(*TWO_FAMILIES, "--adapters=tests.fused_adapters"))
    assert result and all(v == [] for v in result.values())


def test_unimportable_adapters_fail_every_test_with_the_import_error(pytester):
    module = write_module(pytester.path, "import sys\nsys.exit('refusing to load')\n")
    result = outcomes(pytester.inline_run(*TWO_FAMILIES, f"--adapters={module}"))
    assert result and all(len(v) == 1 and "cannot import adapters" in v[0] for v in result.values())
    assert all("refusing to load" in v[0] for v in result.values())


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
