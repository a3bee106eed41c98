"""The course's environment: courses by name and the rubric's `[environment]`, what a
submission's own project files ask for and the note its report then carries, and a run
whose submissions run in an environment uv builds for the course, every report naming it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from cs336_harness.grading.environments.course_env import WorkerEnvironment, for_course
from cs336_harness.grading.environments.courses import COURSE_2025, COURSE_2026, CUSTOM, from_table
from cs336_harness.grading.errors import GraderError
from cs336_harness.grading.intake.absent_imports import absent_imports
from cs336_harness.grading.intake.declared_env import Declared, declared, note, packages_note
from cs336_harness.grading.sandbox import tiers
from cs336_harness.grading.sandbox.limits import Limits
from cs336_harness.grading.scoring import DEFAULT_RUBRIC, RubricError, load_rubric
from tests.grading import synthetic
from tests.grading.conftest import grade

WHERE = "rubric r, [environment]"


def test_a_course_is_named_or_the_rubric_s_own():
    assert from_table({"course": "2025"}, WHERE) is COURSE_2025
    own = from_table({"python": "3.13", "torch": "~=2.6.0", "packages": ["numpy<2"]}, WHERE)
    assert (own.name, own.python, own.torch_minor) == (CUSTOM, "3.13", "2.6")
    assert own.requirements[:2] == ("torch~=2.6.0", "numpy<2")
    for table, message in [
        ({"course": "2024"}, "no course '2024': the courses are 2025, 2026"),
        ({"course": "2025", "torch": "~=2.6.0"}, "give it alone"),
        ({"python": "3.12"}, "no torch"),
        ({"python": "3", "torch": "~=2.6.0"}, "major.minor"),
        ({"python": "3.10", "torch": "~=2.6.0"}, "older than the worker runs on"),
        ({"python": "3.12", "torch": "2.6"}, "a specifier"),
        ({"cuda": True}, "may hold only"),
    ]:
        with pytest.raises(ValueError, match=message):
            from_table(table, WHERE)


def test_the_default_rubric_grades_on_the_newest_course_which_is_uv_lock_s():
    assert load_rubric(DEFAULT_RUBRIC).course is COURSE_2026
    installed = {"torch": "2.11.0", "numpy": "2.4.6", "safetensors": "0.8.0"} | {
        p.split(">=")[0]: "9999.0" for p in COURSE_2026.packages
    }
    assert COURSE_2026.admits("3.12.1", installed)
    assert not COURSE_2026.admits("3.11.7", installed)
    assert not COURSE_2025.admits("3.12.1", installed)  # its torch is 2.6


def test_a_malformed_environment_table_is_a_rubric_error(tmp_path: Path):
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(DEFAULT_RUBRIC.read_text().replace('course = "2026"', 'course = "2030"'))
    with pytest.raises(RubricError, match="no course '2030'"):
        load_rubric(rubric)


def _environment(python: str, torch: str) -> WorkerEnvironment:
    return WorkerEnvironment("python", (), (), "", python, (("torch", torch),))


def test_a_submission_written_for_another_course_is_told_which(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nrequires-python = ">=3.12"\n'
        'dependencies = ["einops>=0.8.1", "torch~=2.6.0", '
        "\"torch~=2.2.2; sys_platform == 'darwin' and platform_machine == 'x86_64'\"]\n"
    )
    asked = declared(tmp_path)
    assert asked == Declared(">=3.12", "~=2.6.0", "", ("einops", "torch"))
    assert note(asked, _environment("3.12.1", "2.11.0+cu130")) == (
        "written for torch ~=2.6.0, graded on Python 3.12.1 and torch 2.11.0+cu130: grade it "
        "on its own with --course 2025"
    )
    assert note(asked, _environment("3.12.1", "2.6.0")) is None
    assert note(asked, _environment("3.11.7", "2.6.0")) == (
        "written for Python >=3.12, graded on Python 3.11.7 and torch 2.6.0: grade it on its "
        "own with --course 2025"
    )
    # A lock says it where the project does not; a course that fits none says so.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "uv.lock").write_text('[[package]]\nname = "torch"\nversion = "2.8.0"\n')
    assert note(declared(tmp_path), _environment("3.12.1", "2.11.0")) == (
        "written for torch 2.8.0 (its uv.lock), graded on Python 3.12.1 and torch 2.11.0: "
        "grade it on its own in an environment of the rubric's ([environment])"
    )


def test_the_packages_a_submission_adds_are_named(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\ndependencies = ["torch~=2.6.0", "rich>=13", "PyYAML", "hydra_core==1.3", '
        "\"pywin32; sys_platform == 'win32'\"]\n"
    )
    asked = declared(tmp_path)
    assert asked.packages == ("torch", "rich", "pyyaml", "hydra-core")
    held = WorkerEnvironment("python", (), (), "", "3.12.1", (("torch", "2.6.0"), ("PyYAML", "6")))
    assert packages_note(asked, held) == (
        "your pyproject.toml adds rich, hydra-core; the course's environment has none of them "
        "(a test whose code imports one fails, naming it)"
    )
    assert packages_note(Declared(packages=("torch",)), held) is None


def test_the_grader_s_own_environment_shows_the_worker_the_course_s_packages_alone():
    """The default course runs where the grader does, through a view of the course's
    distributions: what the grader alone uses (rich, Matplotlib) is absent for the worker
    and for the reading of its imports, as in an environment uv builds for a course."""
    environment = for_course(COURSE_2026)
    try:
        assert environment.own and environment.view and environment.site == (environment.view,)
        view = Path(environment.view)
        for held in ("torch", "numpy", "einops", "jaxtyping", "tqdm", "safetensors"):
            assert (view / held).exists(), held
        for absent in ("rich", "matplotlib", "jinja2_report", "selenium", "cs336_basics"):
            assert not (view / absent).exists(), absent
        assert environment.version("torch") and environment.version("rich") is None
        assert {"torch", "wandb"} <= set(environment.offered)
        assert "with the course's packages alone" in environment.description
        submission = view.parent / f"{view.name}-submission"
        (submission / "cs336_basics").mkdir(parents=True)
        (submission / "cs336_basics" / "log.py").write_text("import rich\nimport torch\n")
        assert [str(a) for a in absent_imports(submission, environment.site)] == [
            "rich (cs336_basics/log.py:1)"
        ]
    finally:
        environment.release()
        shutil.rmtree(view.parent / f"{view.name}-submission", ignore_errors=True)
    assert not view.exists()


def test_a_reference_implementation_mounted_for_a_view_is_refused(tmp_path: Path):
    """A view links into the grader's site-packages, which the worker's sandbox mounts: an
    installed (not editable) reference implementation there would be readable by path."""
    if tiers._namespaces_refused():
        pytest.skip("bubblewrap's tier is not checked where namespaces are refused")
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    (site / "cs336_basics").mkdir(parents=True)
    view = tmp_path / "view"
    view.mkdir()
    sandbox = tiers.Sandbox(mounts=(str(tmp_path / "venv"), str(view)), site=(str(view),))
    with pytest.raises(GraderError, match=r"site-packages hold .*/cs336_basics, which the "):
        tiers.check_sandbox(sandbox, tmp_path / "bundle" / "trusted", Limits())


def test_project_files_are_read_with_bounds_and_through_no_link(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text('[project]\ndependencies = ["torch~=2.6.0"]\n')
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "pyproject.toml").symlink_to(elsewhere)
    assert declared(submission) == Declared()
    (submission / "pyproject.toml").unlink()
    (submission / "pyproject.toml").write_text("x" * (5 << 20))
    assert declared(submission) == Declared()
    (submission / "pyproject.toml").write_text('[project]\ndependencies = ["torch~=not"]\n')
    os.mkfifo(submission / "uv.lock")  # a FIFO would block a plain read
    assert declared(submission) == Declared()


# A course of the rubric's own that the grader's environment is not (its tqdm is newer):
# uv builds it, from its cache, in seconds.
OWN_PACKAGES = [p for p in COURSE_2026.packages if not p.startswith("tqdm")] + ["tqdm<4.67"]
OWN_COURSE = f"""
[environment]
python = "3.12"
torch = "~=2.11.0"
packages = {OWN_PACKAGES!r}
""".replace("'", '"')
# Imported only where the worker runs in that course's environment; its package asks for its
# own version, as upstream's handout's does.
NEEDS_OLD_TQDM = synthetic.Synthetic(
    package_head="""
    import importlib.metadata

    __version__ = importlib.metadata.version("cs336_basics")
    """,
    adapters_tail="""
    import tqdm

    if tuple(int(p) for p in tqdm.__version__.split(".")[:2]) >= (4, 67):
        raise ImportError(f"this submission needs tqdm < 4.67, not {tqdm.__version__}")
    """,
)


# What a real 2025 solution did: a logger built with rich at import, which its own
# pyproject.toml adds; rich is the grader's, not the course's.
LOGS_WITH_RICH = synthetic.Synthetic(
    package_head="""
    import logging

    from rich.logging import RichHandler

    logging.getLogger(__name__).addHandler(RichHandler())
    """,
    files={
        "pyproject.toml": """
        [project]
        name = "cs336_basics"
        dependencies = ["torch", "einops", "rich>=13", "hydra-core>=1.3"]
        """
    },
)


def _verdict(results: dict) -> tuple[float, set[str], list[str]]:
    """A verdict as a student reads it: the score, the tests' messages, and the notes."""
    notes = [line for line in results["output"].splitlines() if line.startswith("note: ")]
    return results["score"], {t["output"].splitlines()[0] for t in results["tests"]}, notes


def test_submissions_run_in_the_course_s_environment_and_every_report_names_it(
    tmp_path: Path,
):
    """A submission that needs the course's own tqdm, and one that imports rich (the
    grader's, no course's) at module level: the first graded in the course's built
    environment alone; the second the same in it as in the grader's own (the default
    course's), naming rich in the tests' messages and the notes. Every report names the
    environment."""
    rubric = tmp_path / "rubric.toml"
    text = DEFAULT_RUBRIC.read_text()
    rubric.write_text(text[: text.index("[environment]")] + OWN_COURSE)
    synthetic.write_submission(tmp_path / "class" / "alice", NEEDS_OLD_TQDM)
    synthetic.write_submission(tmp_path / "class" / "carol", LOGS_WITH_RICH)
    run = grade(tmp_path / "class", "-j2", "--stored-inputs", "--rubric", rubric,
                out=tmp_path / "out")  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.results("alice")["score"] == run.results("alice")["max_score"]
    for name in ("alice", "carol"):
        environment = next(
            line for line in run.results(name)["output"].splitlines()
            if line.startswith("environment:")
        )  # fmt: skip
        assert environment.startswith("environment: the rubric's [environment]: Python 3.12.")
        assert "built by uv in" in environment and "; the grader: Python" in environment
    properties = run.junit().find("testsuite/properties")
    assert "built by uv" in {p.get("name"): p.get("value") for p in properties}["environment"]
    # On the grader's own environment, the default course's, the first cannot even be
    # imported; the one that imports rich gets the same verdict as in the built one.
    own = grade(tmp_path / "class" / "alice", tmp_path / "class" / "carol", "-j2",
                "--stored-inputs", out=tmp_path / "own")  # fmt: skip
    assert own.results("alice")["score"] == 0
    assert "needs tqdm < 4.67" in own.results("alice")["tests"][0]["output"]
    built, default = _verdict(run.results("carol")), _verdict(own.results("carol"))
    assert built == default
    score, messages, notes = default
    assert score == 0 and len(messages) == 1
    assert messages.pop().startswith(
        "error: cannot import adapters: AbsentModuleError: the grading environment has no module "
        "'rich' (imported at cs336_basics/__init__.py:4); it offers Python's standard library "
        "and einops, einx, jaxtyping, numpy, psutil, pytest, regex, submitit, tiktoken, torch, "
        "tqdm, wandb"
    )
    assert notes[0].startswith("note: imports modules the grading environment lacks: rich "
                               "(cs336_basics/__init__.py:4)")  # fmt: skip
    assert "note: your pyproject.toml adds rich, hydra-core; the course's environment has none" in (
        "\n".join(notes)
    )
