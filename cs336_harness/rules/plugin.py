"""`pytest --rules`: the assignment's rules checked on your own code, as the grader checks them.

The static scan (`static_scan`) reads the implementation under test, the folder holding
`tests/adapters.py` (`--adapters`), and the session ends with one section listing each
forbidden use with its file and line, or saying there is none. Nothing fails because of
it: a course decides in its rubric what a use costs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cs336_harness.adapter_loader import looks_like_path, resolve_spec
from cs336_harness.rules.static_scan import scan_submission


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("cs336").addoption(
        "--rules",
        action="store_true",
        help="list the implementation's uses of torch.nn / torch.nn.functional / torch.optim "
        "that the assignment forbids (a static reading, as cs336-grade does)",
    )


def submission_root(config: pytest.Config) -> Path | None:
    """The folder whose `cs336_basics/` and `tests/adapters.py` are under test, or None when
    the adapters are no file of such a folder (a dotted module name)."""
    spec = resolve_spec(config.getoption("--adapters"), dict(os.environ))
    if not looks_like_path(spec):
        return None
    adapters = Path(spec).expanduser().resolve()
    return adapters.parent.parent if adapters.parent.name == "tests" else adapters.parent


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not config.getoption("--rules"):
        return
    root = submission_root(config)
    terminalreporter.section("the assignment's rules (static reading)")
    if root is None:
        terminalreporter.write_line("not checked: --adapters names a module, not a file")
        return
    findings, unscanned = scan_submission(root)
    for finding in findings:
        terminalreporter.write_line(f"forbidden: {finding}")
    for file in unscanned:
        terminalreporter.write_line(f"not read: {file.path} ({file.reason})")
    if not findings:
        terminalreporter.write_line(
            f"no use of torch.nn, torch.nn.functional or torch.optim beyond what the "
            f"assignment allows, in {root}"
        )
