"""The pytest side of the harness: which adapters, which fixtures, and what each test checks
(its options, markers and hook: docs/maintaining.md, "The pytest plugin").

PYTEST_DONT_REWRITE: a plugin, not a test, so pytest leaves its asserts as they are
(and does not warn that it was imported before its rewriting began)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

from cs336_harness.adapters import deferred_dynamo, submission_imports
from cs336_harness.adapters.loader import (
    Adapters,
    UnimportableAdapters,
    is_not_implemented,
    resolve_spec,
)
from cs336_harness.families import BY_NAME
from cs336_harness.judging.case_layout import COST, KINDS, case_kind
from cs336_harness.judging.cases import Case, case_table, load_case
from cs336_harness.judging.compare import OracleMismatch
from cs336_harness.manifest import manifest_problems
from cs336_harness.paths import REPO_ROOT

DEFAULT_FIXTURES = REPO_ROOT / "tests" / "fixtures"
FIXTURES_ENV_VAR = "CS336_FIXTURES"
TYPECHECK_ENV_VAR = "CS336_TYPECHECK"
# The `cases=` of a family marker that selects the cases holding gradients.
_ADAPTERS = pytest.StashKey[Any]()
_FIXTURES = pytest.StashKey[Path]()
_DEVICE = pytest.StashKey[torch.device]()
# A failing comparison's message opens with its likely cause (`cs336_harness/judging/diagnosis/`);
# `--rules` lists the implementation's forbidden uses of torch.nn (`cs336_harness/rules/`).
pytest_plugins = ["cs336_harness.judging.diagnosis.plugin", "cs336_harness.judging.rules_plugin"]
_SHAPE_CHECKS = pytest.StashKey[Any]()
HARDENING_LINE = (
    "hardening: stricter than the assignment, scored apart ({why}); "
    '`pytest -m "not hardening"` leaves these tests out'
)


class AdapterHooks:
    @pytest.hookspec(firstresult=True)
    def pytest_cs336_adapters(self, config: pytest.Config) -> object | None:
        """The object whose `run_*` attributes the tests call; None: the adapters module
        named by `--adapters`, imported into this process."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(AdapterHooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cs336", "CS336 harness")
    group.addoption(
        "--adapters",
        metavar="MODULE_OR_PATH",
        help="adapters module under test: a dotted module name or a path to a .py file "
        "(default: $CS336_ADAPTERS, else tests/adapters.py)",
    )
    group.addoption(
        "--fixtures-dir",
        metavar="DIR",
        help="directory of reference fixtures with its MANIFEST.sha256 "
        "(default: $CS336_FIXTURES, else tests/fixtures)",
    )
    group.addoption(
        "--typecheck",
        action="store_true",
        help="check every call into cs336_basics against its jaxtyping annotations "
        "(beartype, through jaxtyping's import hook; also $CS336_TYPECHECK=1)",
    )
    group.addoption(
        "--device",
        default="cpu",
        metavar="DEVICE",
        help="torch device the adapters get the cases' inputs and weights on: cpu, cuda, "
        "cuda:1, mps (default: cpu); outputs are compared on the CPU",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "family(name): the component family a test checks")
    config.addinivalue_line("markers", "meta: tests of the tests, run by `make meta`")
    config.addinivalue_line(
        "markers", "hardening(why): behaviour this project chose where upstream is silent"
    )
    config.addinivalue_line(
        "markers", "trivial(why): a check that an implementation computing nothing also passes"
    )
    config.addinivalue_line(
        "markers",
        "efficiency: a test of what the code costs (a cost case's), not of what it computes; "
        "`-m 'not efficiency'` leaves them out",
    )
    fixtures = config.getoption("--fixtures-dir") or os.environ.get(FIXTURES_ENV_VAR)
    config.stash[_FIXTURES] = Path(fixtures or DEFAULT_FIXTURES).resolve()
    typecheck = os.environ.get(TYPECHECK_ENV_VAR, "")
    if typecheck not in ("", "0", "1"):
        raise pytest.UsageError(f"cs336: {TYPECHECK_ENV_VAR} must be 1 or 0, not {typecheck!r}")
    config.stash[_DEVICE] = _chosen_device(config.getoption("--device"))
    # Before any optimizer's first call, which would import torch._dynamo (a second or more).
    deferred_dynamo.install()
    # Before anything imports cs336_basics: the adapters at session start, and the bundled
    # package's own tests when they are collected.
    if config.getoption("--typecheck") or typecheck == "1":
        from cs336_harness.judging.typecheck import (
            ShapeChecks,  # only when asked: beartype takes 0.2 s
        )

        config.stash[_SHAPE_CHECKS] = ShapeChecks.install()


def _chosen_device(name: str) -> torch.device:
    """The device `--device name` names, as its tensors report it (`cuda` is `cuda:0`), so
    that tests can compare it with the device of what an adapter returns. A name torch does
    not know, or a device it cannot reach on this machine, is a usage error in one line,
    before anything is collected. Only the backend named is asked: `cpu` never touches CUDA
    (the grader's judge forks its children, where initialising CUDA would be unsafe)."""
    try:
        device = torch.device(name)
    except RuntimeError as error:
        raise pytest.UsageError(f"cs336: --device {name}: not a torch device ({error})") from None
    missing = None
    if device.type == "cuda" and not torch.cuda.is_available():
        missing = "CUDA"
    elif device.type == "mps" and not torch.backends.mps.is_available():
        missing = "MPS"
    if missing is not None:
        raise pytest.UsageError(
            f"cs336: --device {name}: torch sees no {missing} device on this machine"
        )
    try:
        return torch.empty(0, device=device).device
    except Exception as error:  # cuda:3 on a machine with one GPU; a backend not built in
        reason = (str(error).strip() or type(error).__name__).splitlines()[0]
        raise pytest.UsageError(
            f"cs336: --device {name}: torch cannot make a tensor there ({reason})"
        ) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    if (checks := config.stash.get(_SHAPE_CHECKS, None)) is not None:
        checks.uninstall()
    # The checkout's imports end with the session (one run inside another, pytester, too).
    submission_imports.uninstall()


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    problems = manifest_problems(config.stash[_FIXTURES])
    if problems:
        pytest.exit(
            "refusing to run on modified fixtures:\n  "
            + "\n  ".join(problems)
            + "\nRestore them (`git checkout tests/fixtures`) or rebuild them (`make fixtures`).",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    adapters = config.hook.pytest_cs336_adapters(config=config)
    if adapters is None:
        try:
            adapters = Adapters(resolve_spec(config.getoption("--adapters"), os.environ))
        except UnimportableAdapters as error:
            raise pytest.UsageError(f"cs336: {error}") from None
    config.stash[_ADAPTERS] = adapters


def fixtures_dir(config: pytest.Config) -> Path:
    """The session's fixture directory (`--fixtures-dir`, `$CS336_FIXTURES` or the default)."""
    return config.stash[_FIXTURES]


def pytest_report_header(config: pytest.Config) -> str:
    spec = resolve_spec(config.getoption("--adapters"), os.environ)
    fixtures = f"fixtures {config.stash[_FIXTURES]} (manifest verified)"
    checked = "; shapes checked (--typecheck)" if _SHAPE_CHECKS in config.stash else ""
    device = config.stash[_DEVICE]
    on = f"; inputs on {device} (--device)" if device.type != "cpu" else ""
    return f"cs336: adapters {spec}; {fixtures}{checked}{on}"


def _family(node: pytest.Item | pytest.Function) -> str | None:
    marker = node.get_closest_marker("family")
    return marker.args[0] if marker else None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    family = _family(metafunc.definition)
    if family is not None and family not in BY_NAME:
        pytest.fail(
            f"{metafunc.definition.nodeid}: no test family {family!r} "
            "(every family is registered in cs336_harness/families.py)",
            pytrace=False,
        )
    if "case" not in metafunc.fixturenames:
        return
    if family is None:
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid} takes `case` but has no family marker"
        )
    table = case_table(metafunc.config.stash[_FIXTURES])
    if family not in table:
        raise pytest.UsageError(f"no cases for family {family!r} in the fixtures' cases.json")
    selection = metafunc.definition.get_closest_marker("family").kwargs.get("cases")
    if selection not in (None, *KINDS):
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: cases={selection!r}, not one of {KINDS}"
        )
    # A backward or cost case stores no forward output: it belongs to its kind's tests alone.
    entries = [e for e in table[family] if case_kind(e["params"]) == selection]
    if not entries:
        raise pytest.UsageError(f"no {selection or 'forward'} cases for family {family!r}")
    params = [
        pytest.param(
            entry,
            id=entry["id"],
            marks=[
                *([pytest.mark.hardening(entry["hardening"])] if "hardening" in entry else []),
                *([pytest.mark.trivial(entry["trivial"])] if "trivial" in entry else []),
                *([pytest.mark.efficiency] if selection == COST else []),
            ],
        )
        for entry in entries
    ]
    metafunc.parametrize("case", params, indirect=True)


@pytest.fixture
def case(request: pytest.FixtureRequest) -> Case:
    """One stored case of the test's family: params, input tensors, weights and `expected`;
    its inputs and weights on `--device` where the family takes them there."""
    family = _family(request.node)
    case = load_case(request.config.stash[_FIXTURES], family, request.param)
    return case.to(request.config.stash[_DEVICE]) if BY_NAME[family].case_on_device else case


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> torch.device:
    """The `--device` (default the CPU), for the tests whose cases hold no tensor that
    `Case.to` puts there but that hand a device to an adapter or a probe: `get_batch`'s
    argument, the checkpoint probe's model."""
    return request.config.stash[_DEVICE]


@pytest.fixture(scope="session")
def adapters(request: pytest.FixtureRequest) -> Any:
    """The `run_*` functions of the adapters module under test."""
    return request.config.stash[_ADAPTERS]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        family = _family(item)
        if family is not None:
            item.user_properties.append(("family", family))


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    # A failing hardening test says so first: this runs last before the report is made
    # (after the diagnosis), so every reader sees the line on top: the terminal's summary,
    # JUnit, the grader's record.
    marker = item.get_closest_marker("hardening")
    error = call.excinfo.value if call.excinfo is not None else None
    if call.when == "call" and marker is not None and _is_wrong_behaviour(error):
        line = HARDENING_LINE.format(why=marker.args[0] if marker.args else "see the README")
        _prefix_message(error, line)
    report = yield
    if call.when == "call" and is_not_implemented(call.excinfo):
        report.user_properties.append(("status", "not implemented"))
    elif report.failed and isinstance(case := getattr(item, "funcargs", {}).get("case"), Case):
        report.sections.append(("what this case checks", f"{case.id}: {case.description}"))
    return report


# Taken once, at import: what a test does to `pytest` later must not break the reports.
_FAILED = pytest.fail.Exception


def _is_wrong_behaviour(error: BaseException | None) -> bool:
    """A check that failed (a comparison, an assertion, `pytest.raises` that saw nothing
    raised), not a submission that could not be run: an import error, a time-out, a crash
    and "not implemented" keep their own first line (they are `Failed` subclasses)."""
    return isinstance(error, AssertionError | OracleMismatch) or type(error) is _FAILED


def _prefix_message(error: BaseException, line: str) -> None:
    """Put `line` before the message of `error`, keeping its type (the grader reads it)."""
    if isinstance(error, _FAILED) or hasattr(error, "msg"):
        error.msg = f"{line}\n{error.msg}"  # type: ignore[attr-defined]
    else:
        error.args = (f"{line}\n{error.args[0] if error.args else ''}", *error.args[1:])
