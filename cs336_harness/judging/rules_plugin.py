"""`pytest --rules`: the assignment's rules checked on your own code, as the grader checks them
(docs/checking.md, "The assignment's rules: `--rules`").

PYTEST_DONT_REWRITE: a plugin, not a test, so pytest leaves its asserts as they are
(and does not warn that it was imported before its rewriting began)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from cs336_harness.adapters.loader import looks_like_path, resolve_spec
from cs336_harness.rules.called import CALLED_HEADING, Called
from cs336_harness.rules.runtime import Watcher
from cs336_harness.rules.static_scan import scan_submission

_WATCHER = pytest.StashKey[Watcher]()
_CALLED = pytest.StashKey[Counter[Called]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("cs336").addoption(
        "--rules",
        action="store_true",
        help="list the implementation's uses of torch.nn / torch.nn.functional / torch.optim "
        "that the assignment forbids, read from its source and seen while the tests run "
        "(as cs336-grade does)",
    )


def adapters_file(config: pytest.Config) -> Path | None:
    """The adapters file under test, or None when `--adapters` names a module, not a file."""
    spec = resolve_spec(config.getoption("--adapters"), dict(os.environ))
    return Path(spec).expanduser().resolve() if looks_like_path(spec) else None


def submission_root(adapters: Path) -> Path:
    """The folder whose `cs336_basics/` and `tests/adapters.py` are under test."""
    return adapters.parent.parent if adapters.parent.name == "tests" else adapters.parent


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Watch from before the adapters are imported (the harness imports them at the start
    of the session): what their import calls counts with the first test."""
    config = session.config
    adapters = adapters_file(config) if config.getoption("--rules") else None
    if adapters is not None:
        watcher = Watcher(submission_root(adapters), adapters)
        watcher.__enter__()
        config.stash[_WATCHER] = watcher
        config.stash[_CALLED] = Counter()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    outcome = yield
    watcher = item.config.stash.get(_WATCHER, None)
    if watcher is not None:
        marker = item.get_closest_marker("family")
        family = marker.args[0] if marker and marker.args else item.nodeid
        for name, path, line, count in watcher.take():
            item.config.stash[_CALLED][Called(family, path, line, name, 0)] += count
    return outcome


def pytest_sessionfinish(session: pytest.Session) -> None:
    watcher = session.config.stash.get(_WATCHER, None)
    if watcher is not None:
        watcher.__exit__(None, None, None)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption("--rules"):
        return
    adapters = adapters_file(config)
    terminalreporter.section("the assignment's rules")
    if adapters is None:
        terminalreporter.write_line("not checked: --adapters names a module, not a file")
        return
    root = submission_root(adapters)
    findings, unscanned = scan_submission(root, adapters=adapters)
    terminalreporter.write_line("static reading of the source:")
    for finding in findings:
        terminalreporter.write_line(f"forbidden: {finding}")
    for file in unscanned:
        terminalreporter.write_line(f"not read: {file.path} ({file.reason})")
    if not findings:
        terminalreporter.write_line(
            f"no use of torch.nn, torch.nn.functional or torch.optim beyond what the "
            f"assignment allows, in {root}"
        )
    seen = config.stash.get(_CALLED, Counter())
    called = sorted(Called(s.family, s.path, s.line, s.name, n) for s, n in seen.items())
    terminalreporter.write_line(f"{CALLED_HEADING}:")
    for site in called:
        terminalreporter.write_line(f"called: {site}")
    if not called:
        terminalreporter.write_line("no forbidden call seen while the tests ran")
