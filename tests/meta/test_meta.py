"""Tests of the tests: every wrong module in `tests/evidence/wrong/` fails exactly the families
it names in `CAUGHT_BY` and opens its failures with the diagnosis it declares, every family
is seen to fail, and both correct implementations pass every family. Each run is
in-process (pytester); marked `meta`, run by `make meta` (docs/maintaining.md, "Tolerances
and the meta-test")."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import json
import pkgutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

import tests.adapters as correct_adapters
from cs336_harness.adapters.loader import Adapters
from cs336_harness.families import BY_NAME
from cs336_harness.judging.case_layout import ADAMW_READINGS, case_table
from cs336_harness.judging.cases import load_case
from cs336_harness.judging.diagnosis import dtype_cause
from cs336_harness.judging.diagnosis.diagnose import NO_MATCH, LiveCatalog, usage
from cs336_harness.judging.diagnosis.error_shape import GENERIC, KINDS, PREFIX
from cs336_harness.judging.diagnosis.numpy_cases import DERIVED_EXPECTED, load
from cs336_harness.judging.diagnosis.plugin import PROPERTY, SHAPE_PROPERTY
from cs336_harness.judging.diagnosis.root_cause import FOLLOWS, built_from, deepest
from cs336_harness.judging.pytest_plugin import DEFAULT_FIXTURES, fixtures_dir
from cs336_harness.paths import DEFAULT_ADAPTERS
from cs336_staff.catalog import BY_ID, MISTAKES
from cs336_staff.error_margins import tolerance_test

TESTS = Path(__file__).resolve().parent.parent
WRONG = sorted(p for p in (TESTS / "evidence" / "wrong").glob("*.py") if not p.name.startswith("_"))
CORRECT = [TESTS / "adapters.py", TESTS / "evidence" / "fused.py"]


# What the wrong modules run: what their code computes. The efficiency tests (their cost)
# are the cost modules' (`test_meta_cost.py`): the wrong BPE trainers are the toy trainer
# with a mistake switched on, as slow as it, and would fail the speed test too.
CORRECTNESS = "not meta and not grading and not platforms and not efficiency"


def run_suite(
    pytester: pytest.Pytester,
    adapters: Path,
    files: list[Path] | None = None,
    markers: str = "not meta and not grading and not platforms",
    keyword: str = "",
) -> list[pytest.TestReport]:
    """Run every family's tests (or those in `files`, of `markers`, matching `keyword` as
    `-k` does) against `adapters`; the reports of their calls."""
    recorder = pytester.inline_run(
        *map(str, files or [TESTS]),
        f"--adapters={adapters}",
        "-p",
        "no:cacheprovider",
        "-m",
        markers,
        *(["-k", keyword] if keyword else []),
    )
    reports = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    errors = [
        r for r in recorder.getreports("pytest_runtest_logreport") if r.failed and r.when != "call"
    ]
    assert not errors, f"{adapters.name}: errors outside test bodies: {[r.nodeid for r in errors]}"
    return reports


# The adapters API: the functions tests/adapters.py defines (upstream's names).
API = frozenset(
    name
    for name, value in vars(correct_adapters).items()
    if inspect.isfunction(value) and value.__module__ == correct_adapters.__name__
)

# An adapters module that serves tests/adapters.py's functions and writes down which test
# file looked up which of them: a module `__getattr__` sees every lookup, called or not,
# and hands out the functions themselves, so the run is the correct module's own.
RECORDER = """
import os

import tests.adapters as _correct


def __getattr__(name):
    if name not in {api!r}:
        raise AttributeError(name)
    test = os.environ.get("PYTEST_CURRENT_TEST", "")
    with open({log!r}, "a") as log:
        log.write(test.partition("::")[0] + "\\t" + name + "\\n")
    return getattr(_correct, name)
"""
# The set of test files of an adapter looked up outside any test (collection, set-up):
# a module that defines it differently runs the whole suite.
EVERY_FILE = None
_uses: dict[str, set[Path] | None] = {}


def adapter_uses(pytester: pytest.Pytester) -> dict[str, set[Path] | None]:
    """Adapter name → the test files that look it up when the correct module runs the
    suite (`EVERY_FILE` where a lookup happened outside any test). Recorded once, by the
    first wrong module's test (pytester is per test)."""
    if not _uses:
        log = pytester.path / "lookups.tsv"
        recorder = pytester.path / "recording_adapters.py"
        recorder.write_text(RECORDER.format(api=sorted(API), log=str(log)))
        failed = failing_families(run_suite(pytester, recorder))
        assert not failed, f"the recorded run of the correct module failed in {failed}"
        uses: dict[str, set[Path] | None] = defaultdict(set)
        for line in log.read_text().splitlines():
            where, _, name = line.partition("\t")
            file = TESTS / "families" / Path(where).name
            if not where or not file.is_file():
                uses[name] = EVERY_FILE
            elif uses[name] is not EVERY_FILE:
                uses[name].add(file)
        _uses.update(uses)
    return _uses


def files_to_run(module, uses: dict[str, set[Path] | None]) -> list[Path] | None:
    """The test files in which `module` can behave unlike the correct adapters: those that
    look up an adapter it defines differently (None: every file)."""
    changed = {n for n in API if getattr(module, n, None) is not getattr(correct_adapters, n)}
    files: set[Path] = set()
    for name in changed:
        if uses.get(name, set()) is EVERY_FILE:
            return None
        files |= uses.get(name, set())
    return sorted(files)


def _family(report: pytest.TestReport) -> str | None:
    return dict(report.user_properties).get("family")


def failing_families(reports: list[pytest.TestReport]) -> set[str]:
    return {_family(r) for r in reports if r.failed}


def _declared(module, name: str) -> frozenset[str]:
    declared = getattr(module, name, frozenset())
    return frozenset({declared}) if isinstance(declared, str) else frozenset(declared)


def declared_mistakes(module) -> frozenset[str]:
    return _declared(module, "DIAGNOSED_AS")


def declared_shapes(module) -> frozenset[str]:
    return _declared(module, "ERROR_SHAPE")


def check_follows(where: str, lines: list[str], family: str, caught_by: frozenset[str],
                  declared: frozenset[str]) -> list[str]:  # fmt: skip
    """A failure of a family built from families the module is also caught by opens with
    where it starts: the deepest of those components, with the mistake named there; or,
    where its output is a mistake of the family's own, says they are wrong too. The lines
    after that opening line."""
    roots = deepest(caught_by & set(built_from(family)))
    if not roots:
        assert not lines[0].startswith(FOLLOWS), f"{where}: opens with {lines[0]!r}"
        return lines
    if not lines[0].startswith(FOLLOWS):
        also = [line for line in lines if line.startswith("your ") and " also fail" in line]
        assert also and all(f"your {r}" in also[0] for r in roots), (
            f"{where}: opens with {lines[0]!r}, and names no wrong component of {roots}"
        )
        return lines
    follows = lines[0]
    assert follows.startswith(FOLLOWS), f"{where}: opens with {follows!r}, not {FOLLOWS!r}"
    named = follows.removeprefix(FOLLOWS).rpartition(": fix ")[0]
    assert [part.split(" (")[0].split(",")[0] for part in named.split(" and your ")] == roots, (
        f"{where}: {follows!r} names other components than {roots}"
    )
    assert not declared or any(f"({m})" in follows for m in declared), (
        f"{where}: {follows!r} names none of {sorted(declared)}"
    )
    return lines[1:]


def check_diagnoses(
    stem: str,
    reports: list[pytest.TestReport],
    declared: frozenset[str],
    live: LiveCatalog,
    shapes: frozenset[str],
    caught_by: frozenset[str] = frozenset(),
):
    """Each diagnosed failure (a wrong value of a forward output) of a family that a declared
    mistake covers opens with that mistake's line, unless the catalog cannot compute that
    mistake on the case; elsewhere it opens with its error's shape, of a kind in `shapes`
    where the module declares any, and says no known mistake matches; each declared mistake
    opens a failure in every family it covers that the module fails, and each declared kind
    of shape but `generic` opens some failure. Where the failing family is built from others
    that the module fails too (`caught_by`), the failure opens first with where it starts
    (`check_follows`)."""
    covered = {family for m in declared if m in BY_ID for family in BY_ID[m].variants}
    opened: set[tuple[str, str]] = set()
    described: set[str] = set()
    for report in reports:
        diagnosis = dict(report.user_properties).get(PROPERTY)
        if not report.failed or diagnosis is None:
            continue
        ids = [] if diagnosis == "none" else diagnosis.split(",")
        lines = report.longreprtext.splitlines()
        # A hardening test's failure opens with that (pytest_plugin), its diagnosis next.
        lines = lines[1:] if lines[0].startswith("hardening:") else lines
        where = f"{stem}: {report.nodeid}"
        if ids and ids != [dtype_cause.ID]:
            lines = check_follows(where, lines, _family(report), caught_by, declared)
        elif lines[0].startswith(FOLLOWS):
            lines = lines[1:]
        first = lines[0]
        shape = dict(report.user_properties).get(SHAPE_PROPERTY)
        if ids:
            assert shape is None, f"{where}: a likely cause and an error shape ({shape})"
        elif _family(report) in DERIVED_EXPECTED:  # an exact output (BPE's): no error shape
            assert shape is None and first.startswith(f"{NO_MATCH}; "), f"{where}: {first!r}"
        else:
            assert first.startswith(PREFIX) and shape in KINDS, f"{where}: opens with {first!r}"
            assert f"\n{NO_MATCH}; " in report.longreprtext, f"{where}: no {NO_MATCH!r} line"
            assert not shapes or shape in shapes, (
                f"{where}: opens with {first!r}, a {shape!r}; expected one of {sorted(shapes)}"
            )
            described.add(shape)
        if ids == [dtype_cause.ID]:  # a wrong dtype: named from the failure's line alone
            assert dtype_cause.ID in declared, f"{where}: diagnosed as {ids}, not declared"
            assert first == dtype_cause.cause(lines[lines.index(first) + 1]), where
            opened.add((dtype_cause.ID, _family(report)))
            continue
        if _family(report) not in covered:
            assert not ids, f"{where}: diagnosed as {ids}, a mistake it does not make"
            continue
        case_id = report.nodeid.rpartition("[")[2].removesuffix("]")
        computable = {c.mistake for c in live.candidates(_family(report), case_id) or []}
        if not ids and not declared & computable:
            continue
        assert ids, f"{where}: no known mistake matches; expected one of {sorted(declared)}"
        # An exact output (BPE's) matches every mistake it matches equally, and the failure
        # names them all: where two make the same merges on a draw (one special token in a
        # long text, kept whole or not split at), either is a right first line.
        best = ids if _family(report) in DERIVED_EXPECTED else ids[:1]
        named = next((i for i in best if i in declared), None)
        assert named, f"{where}: diagnosed as {ids}, expected {sorted(declared)}"
        assert first == BY_ID[ids[0]].line, f"{where}: opens with {first!r}"
        opened.add((named, _family(report)))
    # Several declared mistakes are one output under two names where their outputs coincide
    # (softmax over dim=1 of 3-D scores is the softmax over the queries): each family that
    # one of them covers opens with one of them, and each opens some failure.
    failed = failing_families(reports)
    covered_and_failed = {f for m in declared & BY_ID.keys() for f in BY_ID[m].variants} & failed
    missing = covered_and_failed - {family for _, family in opened}
    assert not missing, f"{stem}: no failure in {sorted(missing)} diagnosed as {sorted(declared)}"
    unopened = declared - {mistake for mistake, _ in opened}
    assert not unopened, f"{stem}: no failure diagnosed as {sorted(unopened)}"
    # `generic` is the fallback: whether some case's error has no pattern depends on the draw
    # (attention masked by multiplying: a case where every query row hides some key), so only
    # the kinds with a pattern must each open a failure on every draw.
    patterned = shapes - {GENERIC}
    assert patterned <= described, (
        f"{stem}: no failure's error shape is {sorted(patterned - described)}"
    )


@pytest.mark.parametrize("module", WRONG, ids=[p.stem for p in WRONG])
def test_wrong_module_is_caught_by_its_family(pytester, request, module):
    wrong = importlib.import_module(f"tests.evidence.wrong.{module.stem}")
    files = files_to_run(wrong, adapter_uses(pytester))
    reports = run_suite(pytester, module, files, CORRECTNESS)
    assert reports
    failed = failing_families(reports)
    assert failed == wrong.CAUGHT_BY, (
        f"{module.stem}: expected failures in {sorted(wrong.CAUGHT_BY)}, got {sorted(failed)}"
    )
    live = LiveCatalog(fixtures_dir(request.config))
    check_diagnoses(module.stem, reports, declared_mistakes(wrong), live, declared_shapes(wrong),
                    wrong.CAUGHT_BY)  # fmt: skip


def test_every_family_is_caught_by_some_wrong_module():
    """Every family's tests can fail: some wrong module names the family in `CAUGHT_BY`,
    which the test above proves on the stored fixtures (and `make sweep` on fresh draws),
    so no family's tolerance is checked from one side only."""
    modules = (importlib.import_module(f"tests.evidence.wrong.{path.stem}") for path in WRONG)
    caught = frozenset().union(*(module.CAUGHT_BY for module in modules))
    uncaught = sorted(set(BY_NAME) - caught)
    assert not uncaught, f"no wrong module in tests/evidence/wrong/ fails {uncaught}: add one"


# What a wrong module could change at import to reach families it does not name: the
# harness, the tests, the reference package, and the parts of torch and numpy they call.
SHARED_MODULES = ("torch", "torch.nn", "torch.nn.functional", "torch.optim", "torch.testing",
                  "numpy", "einops")  # fmt: skip
SHARED_PACKAGES = ("cs336_basics", "cs336_harness", "cs336_staff", "tests")


def _shared_state() -> dict[tuple[str, str], object]:
    """(owner, attribute) → value, over the shared modules, the classes in them (each once,
    under its own name) and the code and defaults of their functions."""
    state: dict[tuple[str, str], object] = {}
    classes: dict[int, type] = {}
    for name, module in list(sys.modules.items()):
        shared = name in SHARED_MODULES or name.startswith(SHARED_PACKAGES)
        if module is None or not shared or name.startswith("tests.evidence.wrong"):
            continue
        for attribute, value in list(vars(module).items()):
            state[name, attribute] = value
            if inspect.isclass(value):
                classes[id(value)] = value
            elif inspect.isfunction(value):
                for part in ("__code__", "__defaults__", "__kwdefaults__", "__dict__"):
                    state[f"{value.__module__}.{value.__qualname__}", part] = getattr(value, part)
    for cls in classes.values():
        for member, value in list(vars(cls).items()):
            state[f"{cls.__module__}.{cls.__qualname__}", member] = value
    return state


def shared_changes_on_import() -> dict[str, list[str]]:
    """Wrong module (or helper) → the shared attributes importing it changed, each module
    imported in turn after everything shared was. Run in a fresh interpreter: where a
    module was imported before, setting a value again is invisible."""
    for package in ("cs336_basics", "cs336_harness", "cs336_staff"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, f"{package}."):
            if not info.name.endswith(".__main__"):  # a command, which would run
                importlib.import_module(info.name)
    for name in (*SHARED_MODULES, "tests.adapters", "tests.conftest"):
        importlib.import_module(name)
    changes = {}
    # What one import leaves is what the next one starts from: read once, not twice.
    after = _shared_state()
    for path in sorted((TESTS / "evidence" / "wrong").glob("*.py")):
        before = after
        importlib.import_module(f"tests.evidence.wrong.{path.stem}")
        after = _shared_state()
        owners = {owner for owner, _ in before}
        changed = [key for key, value in before.items() if after.get(key, value) is not value]
        # An attribute added to a class shadows what it inherits; a submodule is what an
        # import adds to its package.
        changed += [
            key
            for key, value in after.items()
            if key not in before and key[0] in owners and not inspect.ismodule(value)
        ]
        if changed:
            changes[path.name] = [".".join(key) for key in changed][:10]
    return changes


def test_importing_a_wrong_module_changes_nothing_shared():
    """No wrong module (or helper) changes an attribute of the shared modules or of their
    classes when imported: so its runs need only the files that ask for an adapter it
    defines differently (`files_to_run`)."""
    check = (
        "import json, tests.meta.test_meta as m; print(json.dumps(m.shared_changes_on_import()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=TESTS.parent, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {}


@pytest.mark.parametrize("module", CORRECT, ids=[p.stem for p in CORRECT])
def test_correct_module_passes_every_family(pytester, module):
    reports = run_suite(pytester, module)
    assert reports
    failed = failing_families(reports)
    assert failed == set(), f"{module.stem} fails {sorted(failed)}"


# One AdamW (the wrong modules' own, no mistake switched on) in a given reading.
ADAMW_READING = """
from tests.adapters import *  # noqa: F403
from tests.evidence.wrong._adamw_mistakes import adamw_with


def get_adamw_cls():
    return adamw_with(decay_order={decay_order!r}, eps_added_to={eps_added_to!r})
"""


@pytest.mark.parametrize("reading", list(ADAMW_READINGS))
def test_every_reading_of_adamw_passes(pytester, reading):
    """Each reading `test_adamw` accepts, written as one AdamW with two switches, passes every
    test that looks up the optimizer (the `adamw_*` wrong modules, the same class with a
    mistake on, show what does not pass)."""
    decay_order, eps_added_to, _ = ADAMW_READINGS[reading]
    module = pytester.path / "adamw_reading.py"
    module.write_text(ADAMW_READING.format(decay_order=decay_order, eps_added_to=eps_added_to))
    uses = adapter_uses(pytester)["get_adamw_cls"]
    reports = run_suite(pytester, module, None if uses is EVERY_FILE else sorted(uses))
    assert any(r.nodeid.endswith("test_adamw[two_groups]") for r in reports)
    failed = [r.nodeid for r in reports if r.failed]
    assert not failed, f"{reading}: {failed}"


def test_the_readings_of_adamw_are_four():
    """On the stored `two_groups` every two accepted readings differ by more than the
    tolerance, so `test_every_reading_of_adamw_passes` shows each one accepted in its own
    right. The stored case only: a fresh draw may make two readings agree (ε far below √v),
    which costs nothing, as every reading is accepted."""
    fixtures = DEFAULT_FIXTURES
    [entry] = [e for e in case_table(fixtures)["adamw"] if e["id"] == "two_groups"]
    case = load_case(fixtures, "adamw", entry)
    rtol, atol = BY_NAME["adamw"].tolerance["rtol"], BY_NAME["adamw"].tolerance["atol"]
    for a, b in itertools.combinations(ADAMW_READINGS, 2):
        x, y = case[a].double(), case[b].double()
        assert ((x - y).abs() > atol + rtol * y.abs()).any(), f"{a} and {b} are one reading"


def test_every_mistake_is_proved_by_a_wrong_module():
    """Each (mistake, family) of the catalog is declared by a wrong module caught by that
    family, whose run then shows it diagnosed there (`check_diagnoses`)."""
    proved: set[tuple[str, str]] = set()
    for path in WRONG:
        module = importlib.import_module(f"tests.evidence.wrong.{path.stem}")
        for mistake in declared_mistakes(module):
            known = mistake in BY_ID or mistake == dtype_cause.ID
            assert known, f"{path.stem}: DIAGNOSED_AS names no mistake {mistake!r}"
            proved |= {(mistake, family) for family in module.CAUGHT_BY}
    unproved = {(m.id, f) for m in MISTAKES for f in m.variants} - proved
    assert not unproved, f"(mistake, family) without a wrong module: {sorted(unproved)}"


def test_every_declared_error_shape_is_a_kind():
    """`ERROR_SHAPE` names kinds of `error_shape.KINDS` (the meta-test then checks each)."""
    declared = {p.stem: declared_shapes(importlib.import_module(f"tests.evidence.wrong.{p.stem}"))
                for p in WRONG}  # fmt: skip
    unknown = {stem: sorted(kinds - set(KINDS)) for stem, kinds in declared.items()}
    assert not {stem: kinds for stem, kinds in unknown.items() if kinds}
    assert sum(map(bool, declared.values())) >= 5


def _comparison(family: str, case, adapters: Adapters) -> tuple[np.ndarray, float, float]:
    """The expected output and tolerance the family's test compares a correct output with."""
    test = tolerance_test(family)
    seen = []

    def record(actual, expected, *, dtype, rtol, atol, what="output"):
        seen.append((expected.double().numpy(), rtol, atol))

    with mock.patch.object(
        importlib.import_module(test.__module__), "assert_matches_oracle", record
    ):
        test(case, adapters)
    return seen[0]


def test_no_known_mistake_matches_a_correct_output(request):
    """On every stored forward case, each mistake's output has the expected output's shape
    and differs from it by more than the test's tolerance (graded mistakes, whose effect
    shrinks with the data, only where they can show): a correct output is never diagnosed,
    and a mistake that can show on a case does (the sweep checks fresh draws)."""
    fixtures = fixtures_dir(request.config)
    live = LiveCatalog(fixtures)
    adapters = Adapters(str(DEFAULT_ADAPTERS))
    checked = 0
    for family, entry in live.forward_cases():
        candidates = live.candidates(family, entry["id"])
        if family in DERIVED_EXPECTED:
            # Judged exactly (BPE's models): a mistake differs in its shape or some element.
            expected = load(fixtures, family, entry["id"]).expected
            same = [c for c in candidates if c.shape == expected.shape]
            found = [c.mistake for c in same if usage(expected, c, 0.0, 0.0) == 0.0]
            assert not found, f"{family}/{entry['id']}: the correct output matches {found}"
            checked += len(candidates)
            continue
        case = load_case(fixtures, family, entry)
        expected, rtol, atol = _comparison(family, case, adapters)
        for candidate in candidates:
            assert candidate.shape == expected.shape, (
                f"{family}/{case.id}: {candidate.mistake} has shape {candidate.shape}"
            )
        found = [
            c.mistake for c in candidates if usage(expected, c, rtol, atol) <= 1.0 and not c.graded
        ]
        assert not found, f"{family}/{case.id}: the correct output matches {found}"
        checked += len(candidates)
    assert checked >= len(MISTAKES)


def test_a_mistake_named_in_a_family_and_one_built_on_it_is_named_between():
    """One name per mistake down the chain: a mistake the catalog shows in a component and in
    a family built on it is shown in every family between them too (RoPE's, in attention
    with RoPE between RoPE and the block), so that a submission making it everywhere is told
    the same name in each (`root_cause`)."""
    gaps = {}
    for mistake in MISTAKES:
        families = set(mistake.variants)
        for low, high in itertools.permutations(families, 2):
            if low in built_from(high):
                between = {f for f in BY_NAME if low in built_from(f) and f in built_from(high)}
                if missing := between - families:
                    gaps[mistake.id] = sorted(missing)
    assert not gaps, f"named in a family and further down, but not between: {gaps}"
