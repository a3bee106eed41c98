"""What a bare `pytest` runs: the families, as in the handout and upstream's repository
(pyproject's `testpaths`), and a header line in the repository saying how to add the rest."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cs336_harness.families import FAMILIES
from cs336_harness.paths import REPO_ROOT
from tests import conftest


def test_a_bare_pytest_collects_every_family_and_nothing_else(pytestconfig: pytest.Config):
    """`pytest -k rope` finds each family's tests where the handout does, and imports none of
    the project's own test modules to find that they hold nothing for it (`make bench`)."""
    paths = pytestconfig.getini("testpaths")
    found = {
        str(module.relative_to(REPO_ROOT))
        for path in paths
        for module in (REPO_ROOT / path).rglob("test_*.py")
    }
    assert found == {family.test_file for family in FAMILIES}


@pytest.mark.parametrize(
    ("source", "said"),
    [(pytest.Config.ArgsSource.TESTPATHS, True), (pytest.Config.ArgsSource.ARGS, False)],
)
def test_the_header_says_how_to_run_the_projects_own_tests(source, said):
    header = conftest.pytest_report_header(SimpleNamespace(args_source=source))
    assert (header is not None and "`pytest tests`" in header) is said
