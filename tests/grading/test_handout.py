"""The student handout: no reference implementation, a clean "not implemented" test run in
its own uv environment, and 0 points from its own grader."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from cs336_harness.families import BY_NAME, FAMILIES
from cs336_harness.grading.packaging.handout import export
from tests.grading.real_world import write_wrong_package
from tests.harness.test_docs import broken_links

pytestmark = [
    pytest.mark.skipif(shutil.which("uv") is None, reason="needs uv to build the handout's env"),
]

REMOVED = (
    "cs336_staff",
    "oracle",
    "fixturegen",
    "evidence",
    "tests/harness",
    "tests/meta",
    "tests/package",
    "error_margins",
)


@pytest.fixture(scope="module")
def handout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("handout") / "cs336"
    export(dest)
    return dest


def _uv(handout: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The handout gets its own environment, from uv's cache: never the one running this test.
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
    }
    return subprocess.run(
        ["uv", *args], cwd=handout, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_handout_has_no_reference_implementation(handout: Path):
    paths = [p.relative_to(handout).as_posix() for p in handout.rglob("*")]
    assert not [p for p in paths if any(r in p for r in REMOVED)]
    assert not (handout / "tests" / "grading").exists()
    for text in ((handout / "Makefile").read_text(), (handout / "pyproject.toml").read_text()):
        assert not [r for r in REMOVED if r in text]
    stubbed = [handout / "tests" / "adapters.py", *(handout / "cs336_basics").rglob("*.py")]
    functions = [
        node
        for path in stubbed
        for node in ast.walk(ast.parse(path.read_bytes()))
        if isinstance(node, ast.FunctionDef)
    ]
    assert len(functions) > 30
    assert all(isinstance(f.body[-1], ast.Raise) for f in functions)


def test_the_handout_test_run_is_a_clean_not_implemented_report(handout: Path):
    assert _uv(handout, "sync", "--locked", "--offline", "--quiet").returncode == 0
    run = _uv(handout, "run", "--offline", "pytest", "-p", "no:cacheprovider")
    assert run.returncode == 1, run.stdout[-3000:]
    failed = int(re.search(r"(\d+) failed", run.stdout)[1])
    assert failed > 50
    assert not re.search(r"\d+ (passed|errors?)\b", run.stdout)
    sections = re.split(r"\n_+ \S.* _+\n", run.stdout.split("= FAILURES =")[1])[1:]
    sections[-1] = sections[-1].split("\n=")[0]
    assert len(sections) == failed
    # A probe names every adapter it drives: "not implemented: run_save_checkpoint and ..."
    not_implemented = r"not implemented: \w+( and \w+)*\n?"
    assert all(re.fullmatch(not_implemented, s) for s in sections), sections[:3]
    assert "Traceback" not in run.stdout and "Error" not in run.stdout


def test_the_handout_typechecks_with_its_own_make_target(handout: Path):
    assert "pytest --typecheck" in (handout / "Makefile").read_text()
    assert _uv(handout, "sync", "--locked", "--offline", "--quiet").returncode == 0
    run = _uv(
        handout, "run", "--offline", "pytest", "--typecheck", "-k", "silu", "-p", "no:cacheprovider"
    )
    assert run.returncode == 1, run.stdout[-3000:]
    assert "shapes checked (--typecheck)" in run.stdout
    assert re.search(r"\d+ failed", run.stdout) and not re.search(r"\d+ passed", run.stdout)
    assert "not implemented: run_silu" in run.stdout and "Traceback" not in run.stdout


def test_a_students_checkout_is_graded_on_its_own_package_not_the_stubs(
    handout: Path, tmp_path: Path
):
    # The student's package, imported inside the run_* functions only: its SiLU is right,
    # its softmax wrong. The version before `submission_imports` ran the handout's stubs
    # instead ("not implemented" for both).
    adapters = write_wrong_package(tmp_path / "student", "lazy")
    assert _uv(handout, "sync", "--locked", "--offline", "--quiet").returncode == 0
    families = ["tests/families/test_silu.py", "tests/families/test_softmax.py"]
    run = _uv(handout, "run", "--offline", "pytest", *families, f"--adapters={adapters}",
              "-p", "no:cacheprovider", "-rA")  # fmt: skip
    results = set(re.findall(r"^(PASSED|FAILED) \S+::(test_[a-z]+)", run.stdout, re.M))
    assert results == {("PASSED", "test_silu"), ("FAILED", "test_softmax")}, run.stdout[-3000:]
    assert "not implemented" not in run.stdout


def test_the_handout_readme_says_how_to_run_the_contract_alone(handout: Path):
    readme = (handout / "README.md").read_text()
    assert 'uv run pytest -m "not hardening"' in readme
    # Every file it cites ships with it, the contract included.
    cited = re.findall(r"`([\w./-]+\.(?:md|py|toml))`", readme)
    assert "docs/contract.md" in cited
    assert [c for c in cited if not (handout / c).is_file()] == []
    # Its pages link only to what it holds: the contract's conventions are its own section.
    assert broken_links(handout, [handout / "README.md", handout / "docs" / "contract.md"]) == []
    # It says of every registered family whether the assignment asks for it.
    assert [f.name for f in FAMILIES if f"`{f.name}`" not in readme] == []
    assert "uv run pytest tests/families/test_rope.py" in readme


def test_grading_the_handout_gives_zero_points_all_not_implemented(handout: Path):
    assert _uv(handout, "sync", "--locked", "--offline", "--quiet").returncode == 0
    run = _uv(handout, "run", "--offline", "cs336-grade", "--out", "report")
    assert run.returncode == 0, run.stderr
    results = json.loads((handout / "report" / "results.json").read_text())
    assert results["score"] == 0 and results["max_score"] >= 23
    assert {t["extra_data"]["status"] for t in results["tests"]} == {"not implemented"}


def test_the_handout_cannot_draw_fresh_inputs_and_says_so(handout: Path):
    assert _uv(handout, "sync", "--locked", "--offline", "--quiet").returncode == 0
    run = _uv(handout, "run", "--offline", "cs336-grade", ".", "--out", "fresh-report")
    assert run.returncode == 2
    [line] = run.stderr.strip().splitlines()
    assert "cannot draw fresh inputs" in line and "--stored-inputs" in line
    stored = _uv(handout, "run", "--offline", "cs336-grade", ".", "--stored-inputs", "--out", "r")
    assert stored.returncode == 0, stored.stderr
    assert json.loads((handout / "r" / "results.json").read_text())["output"].splitlines()[1] == (
        "inputs: stored fixtures (--stored-inputs: public, a submission may carry their answers)"
    )


# Run in the handout's own environment: each wrong module (this repository's, copied in with
# the bundled implementation that they modify) over the test files of its families, in one
# process; prints each module's failures' first lines.
DRIVER = """
import json, sys
import pytest

class FirstLines:
    def __init__(self):
        self.lines = []
    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.failed:
            lines = report.longreprtext.splitlines()
            # A hardening test's failure opens with that; its diagnosis comes next.
            self.lines.append(lines[1] if lines[0].startswith("hardening:") else lines[0])

out = {}
for stem, files in json.loads(sys.argv[1]).items():
    collector = FirstLines()
    args = [*files, f"--adapters=tests/evidence/wrong/{stem}.py", "-q", "-p", "no:cacheprovider"]
    pytest.main(args, plugins=[collector])
    out[stem] = collector.lines
print("FIRST-LINES " + json.dumps(out))
"""


def test_a_finished_handout_names_catalogued_mistakes_as_this_repository_does(
    handout: Path, tmp_path: Path
):
    import importlib

    from cs336_harness.paths import REPO_ROOT
    from cs336_staff.catalog import MISTAKES

    assert _uv(handout, "sync", "--locked", "--offline", "--quiet").returncode == 0
    finished = tmp_path / "finished"
    shutil.copytree(handout, finished, ignore=shutil.ignore_patterns(".venv"))
    # A student's finished copy: the bundled implementation where the stubs were. The catalog
    # itself stays out: the failures below can only be named from the table the handout ships.
    shutil.copytree(REPO_ROOT / "cs336_basics", finished / "cs336_basics", dirs_exist_ok=True)
    shutil.copyfile(REPO_ROOT / "tests" / "adapters.py", finished / "tests" / "adapters.py")
    shutil.copytree(
        REPO_ROOT / "tests" / "evidence" / "wrong", finished / "tests" / "evidence" / "wrong"
    )
    assert not (finished / "cs336_staff").exists()
    lines = {m.id: m.line for m in MISTAKES}
    expected: dict[str, set[str]] = {}
    files: dict[str, list[str]] = {}
    # One diagnosed wrong module per family that has one (the first by name): the table is
    # one file, written by the code that the meta-test proves on every catalogued mistake
    # with the live catalog, and `tests/meta/test_diagnosis.py` proves the table gives the
    # live catalog's answers; here the point is that a handout reads it. All 126 took 2 min.
    sampled: set[str] = set()
    for path in sorted((REPO_ROOT / "tests" / "evidence" / "wrong").glob("[!_]*.py")):
        module = importlib.import_module(f"tests.evidence.wrong.{path.stem}")
        declared = getattr(module, "DIAGNOSED_AS", ())
        declared = {declared} if isinstance(declared, str) else set(declared)
        tests = sorted({BY_NAME[family].test_file for family in module.CAUGHT_BY})
        new = set(module.CAUGHT_BY) - sampled
        if declared and new and all((finished / test).is_file() for test in tests):
            sampled |= new
            expected[path.stem] = {lines[m] for m in declared}
            files[path.stem] = tests
    (finished / "driver.py").write_text(DRIVER)
    run = subprocess.run(
        [str(handout / ".venv" / "bin" / "python"), "driver.py", json.dumps(files)],
        cwd=finished, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    [report] = [line for line in run.stdout.splitlines() if line.startswith("FIRST-LINES ")]
    first_lines = json.loads(report.removeprefix("FIRST-LINES "))
    named = {stem for stem, wanted in expected.items() if wanted & set(first_lines[stem])}
    unnamed = {stem: first_lines[stem][:2] for stem in expected.keys() - named}
    assert not unnamed, f"in the handout, these wrong modules get no likely cause: {unnamed}"
    assert len(named) >= 15, sorted(named)


def test_the_handout_adapters_are_the_students_to_write(handout: Path):
    from cs336_harness.paths import REPO_ROOT

    def functions(path: Path) -> tuple[ast.Module, list[str]]:
        tree = ast.parse(path.read_text())
        return tree, [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]

    tree, names = functions(handout / "tests" / "adapters.py")
    _, reference = functions(REPO_ROOT / "tests" / "adapters.py")
    assert names == [name for name in reference if not name.startswith("_")]
    assert "docs/contract.md" in (ast.get_docstring(tree) or "")
