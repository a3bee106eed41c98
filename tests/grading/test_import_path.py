"""Nothing outside the trusted bundle runs in a trusted process.

A module file in the temp directory, the output directory or a submission that has the
name of a standard-library module, of pytest's `conftest.py`, of `site`'s hooks
(`sitecustomize.py`, `usercustomize.py`, a `.pth` file) or of the `tests` package must never
be imported by the grader's judges, their test processes or the fixture draw: on a shared
grading host any local user can write the temp directory, and those processes run as the
grader's user and decide every verdict. Each planted file writes a marker naming the
process that ran it; the grade must come out as without them, with and without the sandbox.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.grading import synthetic
from tests.grading.conftest import family_statuses, grade

# Standard-library modules that the judge, its test processes or the fixture draw import
# after start-up (found by planting them against the version that ran them); `readline`
# and `pdb` come with pytest's debugging plugin, `xml` with its JUnit writer.
STDLIB_LOOKALIKES = ("difflib", "csv", "pdb", "readline", "xml", "bdb", "cmd", "pprint")


def _marker_code(markers: Path, planted: str) -> str:
    """Python that records, under `markers`, that the file `planted` ran, and in which process."""
    return textwrap.dedent(
        f"""\
        import os as _os, sys as _sys
        _name = {planted.replace("/", "_")!r} + "-" + str(_os.getpid())
        _path = _os.path.join({str(markers)!r}, _name)
        with open(_path, "w") as _f:
            _f.write(f"uid={{_os.getuid()}} argv={{_sys.argv}}")
        """
    )


def plant(directory: Path, markers: Path, stdlib: bool = True) -> None:
    """Look-alike modules in `directory`, each leaving a marker when imported."""
    files = ["conftest.py", "sitecustomize.py", "usercustomize.py", "tests/conftest.py"]
    if stdlib:
        files += [f"{name}.py" for name in STDLIB_LOOKALIKES if name != "xml"]
        files += ["xml/__init__.py", "tests/__init__.py"]
    for name in files:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_marker_code(markers, f"{directory.name}/{name}"))
    # A .pth line that starts with `import` is executed by `site` at start-up.
    code = _marker_code(markers, f"{directory.name}/planted.pth").replace("\n", "; ")
    (directory / "planted.pth").write_text("import os; exec(" + repr(code) + ")\n")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("planted")
    markers = root / "markers"
    markers.mkdir()
    markers.chmod(0o777)  # so that a sandboxed worker's user could leave one too
    for name in ("tmp", "out"):
        plant(root / name, markers)
    for name, submission in (("correct", synthetic.CORRECT), ("wrong", synthetic.WRONG_SOFTMAX)):
        path = synthetic.write_submission(root / "submissions" / name, submission)
        # A submission may ship its own modules: only these names could run outside it.
        plant(path, markers, stdlib=False)
    return root


@pytest.mark.parametrize("sandbox", ["bubblewrap", "none"])
def test_no_planted_module_runs_and_the_grades_stand(planted: Path, sandbox: str):
    # The temp directory (the judge's working directory before the fix) and PYTHONPATH
    # (inherited by the fixture draw before the fix) both hold the look-alikes. The grader
    # itself runs isolated (-I): what its operator's environment holds is the operator's.
    env = os.environ | {"TMPDIR": str(planted / "tmp"), "PYTHONPATH": str(planted / "tmp")}
    out = planted / f"out/{sandbox}"
    run = grade(
        planted / "submissions",
        "--seed=7",  # a fresh draw: the fixture generator is one of the trusted processes
        "-j2",
        *(["--no-sandbox"] if sandbox == "none" else []),
        out=out,
        cwd=planted / "out",
        env=env,
        python_flags=("-I",),
    )
    ran = {p.name: p.read_text() for p in (planted / "markers").iterdir()}
    assert not ran, f"planted files ran: {ran}"
    assert run.returncode == 0, run.stderr
    correct, wrong = run.results("correct"), run.results("wrong")
    assert correct["score"] == correct["max_score"], correct["output"]
    assert family_statuses(wrong, "softmax") >= {"failed"}
    assert all(
        t["extra_data"]["status"] == "passed"
        for t in wrong["tests"]
        if t["extra_data"]["family"] != "softmax"
    )


def test_the_plants_run_where_the_path_allows(tmp_path: Path):
    """The markers can appear: Python started in the planted directory runs them."""
    markers = tmp_path / "markers"
    markers.mkdir()
    plant(tmp_path / "tmp", markers)
    script = [sys.executable, "-S", "-c", "import difflib, csv"]
    subprocess.run(script, check=True, cwd=tmp_path)
    assert not list(markers.iterdir())
    subprocess.run(script, check=True, cwd=tmp_path / "tmp")
    ran = {p.name.split("-")[0] for p in markers.iterdir()}
    assert ran == {"tmp_difflib.py", "tmp_csv.py"}
