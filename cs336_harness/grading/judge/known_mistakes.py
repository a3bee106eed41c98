"""The judge's pytest plugin for the known mistakes: with `--diagnosis-dir DIR` and
`--diagnosis-repo REPO`, a failure is diagnosed from its family's table in DIR, written there
from REPO's catalog the first time a failure of the family asks (`inputs/family_tables.py`).
A submission that fails nothing costs no table.

PYTEST_DONT_REWRITE: a plugin, not a test."""

from __future__ import annotations

from pathlib import Path

import pytest

from cs336_harness.grading.inputs.family_tables import family_table
from cs336_harness.judging.diagnosis.diagnose import LazyTable
from cs336_harness.judging.diagnosis.plugin import use_source
from cs336_harness.judging.pytest_plugin import fixtures_dir


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cs336")
    group.addoption(
        "--diagnosis-dir",
        metavar="DIR",
        help="the run's folder of known mistakes' tables, one per fixtures and family, each "
        "written there when a failure first asks for it",
    )
    group.addoption(
        "--diagnosis-repo",
        metavar="DIR",
        help="the grader's copy, whose catalog writes them",
    )


def pytest_configure(config: pytest.Config) -> None:
    folder, repo = config.getoption("--diagnosis-dir"), config.getoption("--diagnosis-repo")
    if folder and repo:

        def table(family: str) -> Path | None:
            return family_table(Path(folder), Path(repo), fixtures_dir(config), family)

        use_source(config, LazyTable(table))
