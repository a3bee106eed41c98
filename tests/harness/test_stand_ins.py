"""The worker's stand-ins for absent modules (`cs336_harness/grading/worker/stand_ins.py`) and
the grader's reading of them (`cs336_harness/grading/intake/absent_imports.py`): only the
submission's own imports get one, an optional import still sees ImportError, and using one
names the module and where."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from cs336_harness.grading.environments.courses import COURSE_2026
from cs336_harness.grading.intake.absent_imports import absent_imports
from cs336_harness.grading.sandbox.interpreter import COURSE_PACKAGES, site_packages
from cs336_harness.paths import REPO_ROOT

# Modules no environment has: real ones (pynvml, omegaconf) are installed on some hosts (a
# GPU machine's image has pynvml), where they would not be stood in for. The installed module
# imported for real is numpy, not torch: torch's own import under the stand-ins is what every
# graded submission's worker does (the grader's tests), and here it would cost 2 s a run.
SUBMISSION = {
    "cs336_basics/__init__.py": "from cs336_basics import monitor\n",
    "cs336_basics/monitor.py": """\
        import absent_nvml
        from absent_omegaconf import DictConfig, OmegaConf
        import os, numpy

        try:
            import absent_heapdict
        except ImportError:
            absent_heapdict = None


        class Config(DictConfig):
            pass


        def annotated(x: DictConfig | None = None) -> list[DictConfig]:
            return []
        """,
    "cs336_basics/shapes.py": "from fake_lazy import Array, Float\n",
    "tests/adapters.py": "import cs336_basics\nfrom .helpers import x\n",
}

# Run with the submission's folder as argv[1]: what each use of a stand-in does.
PROBE = """
import json, sys
from pathlib import Path
from cs336_harness.grading.worker import stand_ins
root = Path(sys.argv[1])
sys.path.insert(0, str(root))
stand_ins.install(root)
import cs336_basics.monitor as m
report = {"optional": m.absent_heapdict, "annotated": m.annotated(),
          "subclassed": m.Config.__name__}
def outcome(action):
    try:
        action()
        return "ran"
    except ModuleNotFoundError as error:
        return str(error)
report["call"] = outcome(lambda: m.absent_nvml.nvmlInit())
report["instance"] = outcome(lambda: m.Config())
report["truth"] = outcome(lambda: bool(m.OmegaConf))
sys.path.append(sys.argv[2])
report["library"] = outcome(lambda: __import__("fake_library"))
report["lazy_in_library"] = outcome(lambda: __import__("fake_library_lazy"))
report["lazy"] = outcome(lambda: __import__("cs336_basics.shapes").shapes.Array())
print(json.dumps(report))
"""


def _write(tmp_path: Path) -> Path:
    root = tmp_path / "submission"
    for name, text in SUBMISSION.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))
    return root


def test_a_stand_in_imports_and_fails_only_when_used(tmp_path: Path):
    root = _write(tmp_path)
    library = tmp_path / "site"  # an installed package's optional import
    library.mkdir()
    (library / "fake_library.py").write_text("import absent_nvml_x\n")
    # jaxtyping's way: a module-level __getattr__ imports jax when `Array` is asked for.
    # A package, as jaxtyping is: `from package import name` goes through the machinery's
    # fromlist handling, a frame between the importing line and __getattr__.
    # Cached, as jaxtyping's is.
    lazy = (
        "import functools\n@functools.cache\n"
        "def __getattr__(name):\n    import jax_x\n    return jax_x.Array\n"
    )
    (library / "fake_lazy").mkdir()
    (library / "fake_lazy" / "__init__.py").write_text(lazy)
    (library / "fake_library_lazy.py").write_text("from fake_lazy import Array\n")
    command = [sys.executable, "-c", PROBE, str(root), str(library)]
    # The course's packages, as the grader names them to the worker.
    env = os.environ | {COURSE_PACKAGES: ",".join(COURSE_2026.offered)}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    report = json.loads(done.stdout)
    assert report["optional"] is None  # a try that handles ImportError keeps its fallback
    assert report["annotated"] == [] and report["subclassed"] == "Config"
    where = "(imported at cs336_basics/monitor.py:1)"
    assert report["call"].startswith(f"the grading environment has no module 'absent_nvml' {where}")
    assert "it offers Python's standard library and einops, einx" in report["call"]
    assert (
        "no module 'absent_omegaconf' (imported at cs336_basics/monitor.py:2)" in report["instance"]
    )
    assert "no module 'absent_omegaconf'" in report["truth"]
    # An import made outside the submission (a library's) is Python's own failure.
    assert report["library"] == "No module named 'absent_nvml_x'"
    # A library's lazy attribute imports on behalf of the line that asked for it.
    assert "no module 'jax_x' (imported at cs336_basics/shapes.py:1)" in report["lazy"]
    assert report["lazy_in_library"] == "No module named 'jax_x'"


def test_the_grader_lists_the_absent_imports_from_the_source(tmp_path: Path):
    root = _write(tmp_path)
    found = [str(a) for a in absent_imports(root, site_packages())]
    # Not heapdict (optional), not os or numpy (offered), not .helpers (relative: its own).
    assert found == [
        "absent_nvml (cs336_basics/monitor.py:1)",
        "absent_omegaconf (cs336_basics/monitor.py:2)",
        "fake_lazy (cs336_basics/shapes.py:1)",
    ]


def test_what_the_messages_offer_is_what_the_environment_declares():
    """The newest course's packages are what uv.lock's environment declares: the project's
    dependencies and its `course` group (upstream's handout's, where they install without a
    GPU)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    declared = project["project"]["dependencies"] + project["dependency-groups"]["course"]
    assert set(COURSE_2026.offered) <= {_name(spec) for spec in declared}
    assert {_name(spec) for spec in project["dependency-groups"]["course"]} <= set(
        COURSE_2026.offered
    )


def _name(requirement: str) -> str:
    return re.split(r"[<>=~!; \[]", requirement, maxsplit=1)[0]
