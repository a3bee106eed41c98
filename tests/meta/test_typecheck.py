"""`--typecheck`: a shape that breaks a jaxtyping annotation in `cs336_basics` fails at the
call, naming the annotation, where without it the mistake goes on unnoticed.

The import hook must be in place before `cs336_basics` is first imported, which this
process did long ago, so each check runs pytest in a fresh process (seconds: torch's
import). They are tests of the harness, marked `meta` like tests/meta/test_harness.py.
"""

from __future__ import annotations

import importlib.util
import re

import pytest
import torch

# A student's checkout: a package whose annotations are right and whose code is not.
STUDENT_PACKAGE = """
import torch
from jaxtyping import Float
from torch import Tensor


def row_means(x: Float[Tensor, "rows cols"]) -> Float[Tensor, " rows"]:
    return x.mean(dim=0)  # the mistake: one mean per column


def unit_rows(x: Float[Tensor, "rows d"]) -> Float[Tensor, "rows d"]:
    return x / x.norm(dim=-1, keepdim=True)
"""
STUDENT_ADAPTERS = """
from cs336_basics import row_means, unit_rows


def run_row_means(x):
    return row_means(x)


def run_unit_rows(x):
    return unit_rows(x)  # given (batch, rows, d) where the function takes (rows, d)
"""
STUDENT_TESTS = """
import torch


def test_returns_a_wrong_shape(adapters):
    adapters.run_row_means(torch.ones(2, 3))


def test_receives_a_wrong_shape(adapters):
    adapters.run_unit_rows(torch.ones(4, 2, 3))
"""
# The bundled package under the hook: every module imports, and its functions are checked.
BUNDLED_TESTS = """
import importlib
import pkgutil

import pytest
import torch
from jaxtyping import TypeCheckError

import cs336_basics


def test_every_module_imports_and_is_checked():
    for module in pkgutil.iter_modules(cs336_basics.__path__, "cs336_basics."):
        importlib.import_module(module.name)
    logits, targets = torch.zeros(2, 5), torch.zeros(3, dtype=torch.long)
    with pytest.raises(TypeCheckError, match="parameter 'targets'"):
        cs336_basics.cross_entropy(logits, targets)
"""


@pytest.fixture
def student(pytester: pytest.Pytester) -> str:
    """The `--adapters` value of a student's checkout with a shape mistake."""
    pytester.makeconftest('pytest_plugins = ["cs336_harness.judging.pytest_plugin"]')
    pytester.makepyfile(test_student=STUDENT_TESTS)
    checkout = pytester.path / "student"
    (checkout / "cs336_basics").mkdir(parents=True)
    (checkout / "cs336_basics" / "__init__.py").write_text(STUDENT_PACKAGE)
    (checkout / "tests").mkdir()
    (checkout / "tests" / "adapters.py").write_text(STUDENT_ADAPTERS)
    return f"--adapters={checkout / 'tests' / 'adapters.py'}"


def in_order(*texts: str) -> list[str]:
    """Patterns for `re_match_lines`: lines containing each text, in this order."""
    return [f".*{re.escape(text)}" for text in texts]


def test_a_wrong_shape_fails_at_the_call_naming_the_annotation(pytester, student):
    result = pytester.runpytest_subprocess("test_student.py", student, "--typecheck")
    result.assert_outcomes(failed=2)
    result.stdout.re_match_lines(
        in_order(
            "test_returns_a_wrong_shape",
            "return row_means(x)",
            "TypeCheckError: Type-check error whilst checking the return value of "
            "cs336_basics.row_means.",
            "Actual value: f32[3](torch)",
            "Expected type: Float[Tensor, 'rows'].",
            "rows=2",
        )
    )
    result.stdout.re_match_lines(
        in_order(
            "test_receives_a_wrong_shape",
            "return unit_rows(x)",
            "TypeCheckError: Type-check error whilst checking the parameters of "
            "cs336_basics.unit_rows.",
            "The problem arose whilst typechecking parameter 'x'.",
            "Actual value: f32[4,2,3](torch)",
            "Expected type: <class 'Float[Tensor, 'rows d']'>.",
        )
    )


def test_without_the_hook_the_same_calls_go_unnoticed(tmp_path):
    # The student's module under another name, which the hook (if this session has one)
    # leaves alone: the calls that fail above return quietly.
    path = tmp_path / "unchecked_student_package.py"
    path.write_text(STUDENT_PACKAGE)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.row_means(torch.ones(2, 3)).shape == (3,)
    assert module.unit_rows(torch.ones(4, 2, 3)).shape == (4, 2, 3)


def test_the_bundled_package_imports_and_is_checked_under_the_hook(pytester, monkeypatch):
    pytester.makeconftest('pytest_plugins = ["cs336_harness.judging.pytest_plugin"]')
    pytester.makepyfile(test_bundled=BUNDLED_TESTS)
    monkeypatch.setenv("CS336_TYPECHECK", "1")  # the environment's route to the option
    pytester.runpytest_subprocess("test_bundled.py").assert_outcomes(passed=1)
