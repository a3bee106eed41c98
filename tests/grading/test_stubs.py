"""The handout's stubbing: every body replaced, everything else kept byte for byte."""

import ast

import pytest

from cs336_harness.grading.packaging.stubs import stub_source

SOURCE = '''\
"""Module docstring, Θ."""
import torch

LIMIT = 3  # a constant stays


def f(a: int,
      b: str = "Θ") -> int:
    """Docstring
    on two lines."""
    # a comment inside the body goes
    return a + 1  # and a trailing one


def g(x): return x * 2


class C(torch.nn.Module):
    """Class docstring."""

    size: int = 3

    def __init__(self, d):
        super().__init__()
        self.d = d

    @property
    def p(self):
        def inner():
            return 1
        return inner()


async def h():
    """Only a docstring."""


def _private(x):
    return x
'''

EXPECTED = '''\
"""Module docstring, Θ."""
import torch

LIMIT = 3  # a constant stays


def f(a: int,
      b: str = "Θ") -> int:
    """Docstring
    on two lines."""
    raise NotImplementedError


def g(x): raise NotImplementedError


class C(torch.nn.Module):
    """Class docstring."""

    size: int = 3

    def __init__(self, d):
        raise NotImplementedError

    @property
    def p(self):
        raise NotImplementedError


async def h():
    """Only a docstring."""
    raise NotImplementedError


def _private(x):
    raise NotImplementedError
'''


def test_every_body_is_stubbed_and_the_rest_kept():
    assert stub_source(SOURCE.encode()).decode() == EXPECTED


def test_stubbed_source_parses_and_raises():
    namespace: dict = {}
    stubbed = stub_source(b"def f(x):\n    '''Doc.'''\n    return x\n")
    exec(compile(ast.parse(stubbed), "<stub>", "exec"), namespace)
    with pytest.raises(NotImplementedError):
        namespace["f"](1)
    assert namespace["f"].__doc__ == "Doc."
