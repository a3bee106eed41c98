import functools
import gc
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

# pytest's own parser of `-m` expressions: private, but the alternative is a second parser
# of the same grammar that could disagree with the one that selects the tests.
from _pytest.mark.expression import Expression

from cs336_harness.adapters import submission_imports
from cs336_harness.adapters.loader import resolve_spec
from cs336_harness.paths import DEFAULT_ADAPTERS

# One intra-op thread, as the grader's worker runs submissions: the tests' tensors are tiny,
# and a second thread only adds hand-offs, which cost most where another job shares the
# cores (the everyday suite took twice as long with one busy neighbour on two cores).
torch.set_num_threads(1)

# torch is imported by now: about 200,000 objects that live as long as the process.
# Frozen, no garbage collection walks them again: pytest's two full collections at exit and
# the many during the run each cost about 0.1 s otherwise.
gc.freeze()

# pytester runs the suite inside the suite, for the meta-test (tests/meta/test_meta.py).
pytest_plugins = ["cs336_harness.judging.pytest_plugin", "pytester"]

TESTS = Path(__file__).parent
# Tests of the bundled package itself (its error messages, parameter counts, variants, the
# training command, the tokenizer's streaming): they import `cs336_basics` directly, so they
# only mean something, and only import, when the implementation under test is the bundled one.
PACKAGE_TESTS = TESTS / "package"
# Folders whose tests carry a marker because of where they live, not because each module
# remembers to say so: the grader's own tests, the tests of the tests (`make meta`), and the
# grader run end to end on the grading platforms (`make platforms`).
MARKED_FOLDERS = {
    TESTS / "grading": "grading",
    TESTS / "meta": "meta",
    TESTS / "platforms": "platforms",
}
# Folders that hold no tests, only what tests read or import: not walked at all (the
# evidence alone is some 280 files, each asked whether it is a test module every run).
NO_TESTS = {TESTS / "evidence", TESTS / "fixtures"}
# An expression naming more markers than this is not analysed; the folder is collected.
MAX_MARKERS = 8
KEYWORDS = {"and", "or", "not"}


def deselects_every(markexpr: str, marker: str) -> bool:
    """Whether `-m markexpr` deselects every test marked `marker`, whatever other markers it
    carries: false for every presence or absence of the other markers the expression names.
    Marker arguments (`name(key=value)`) are not analysed: such an expression answers no."""
    words = [(word, call) for word, call in re.findall(r"([^\s()]+)(\s*\()?", markexpr)
             if word not in KEYWORDS]  # fmt: skip
    if not words or any(call for _, call in words):
        return False
    others = sorted({word for word, _ in words} - {marker})
    expression = Expression.compile(markexpr)
    if len(others) > MAX_MARKERS:
        return False
    for present in itertools.product((False, True), repeat=len(others)):
        names = {name for name, on in zip(others, present, strict=True) if on} | {marker}
        if expression.evaluate(names.__contains__):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path in NO_TESTS:
        return True
    # Not even imported when `-m` leaves none of its tests (the everyday suite, `-k rope`):
    # the grader's modules and the meta-test's catalog and oracle would cost every run a
    # few tenths of a second for nothing (more where bytecode is not cached).
    if collection_path in MARKED_FOLDERS:
        marker = MARKED_FOLDERS[collection_path]
        return True if deselects_every(config.option.markexpr, marker) else None
    if collection_path != PACKAGE_TESTS:
        return None
    spec = resolve_spec(config.getoption("--adapters"), os.environ)
    return True if spec != str(DEFAULT_ADAPTERS) else None


def pytest_report_header(config: pytest.Config) -> str | None:
    # A bare `pytest` runs only the families (pyproject's `testpaths`); in the repository,
    # where the project's own tests live beside them, say so and how to run those too. The
    # handout has none: it says nothing.
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return None
    if not (TESTS / "harness").is_dir():
        return None
    return "cs336: the component tests (tests/families); `pytest tests` adds the project's own"


@functools.cache
def _folder_marker(path: Path) -> str | None:
    return next((m for folder, m in MARKED_FOLDERS.items() if path.is_relative_to(folder)), None)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Before `-m` deselects. Once per module, not per test: `Path.parents` for each of
    # several hundred tests took a tenth of a second of every run.
    for item in items:
        marker = _folder_marker(item.path)
        if marker is not None:
            item.add_marker(marker)


@pytest.fixture(autouse=True)
def _torch_imported_once(request: pytest.FixtureRequest) -> None:
    """pytester takes the modules imported during an inline run out of `sys.modules` again
    afterwards, and some of torch's cannot be imported twice in one process: torch._dynamo
    (the first call of a function torch guards against the compiler imports it: its Python
    references do, on the `meta` device) imports triton, which aborts the process, and
    torch.distributed (a failed comparison's report imports it) registers operators that
    refuse a second registration. So a test that runs pytest inside pytest has both
    imported first, outside every run."""
    if "pytester" in request.fixturenames:
        import torch._dynamo
        import torch.distributed.tensor  # noqa: F401


@pytest.fixture
def checkout_imports_undone() -> Iterator[None]:
    """For a test that loads a checkout's adapters into this process: the checkout's import
    finder (`cs336_harness.adapters.submission_imports`) and its modules go again afterwards."""
    yield
    submission_imports.uninstall()
