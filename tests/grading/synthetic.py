"""Synthetic submissions: the bundled implementation, copied, with one behaviour changed.

A submission is a copy of `cs336_basics/` and `tests/adapters.py`. Code appended to the
adapters file replaces a `run_*` function (a later `def` wins) or runs at import; code put
at the head of `cs336_basics/__init__.py` runs when the package is imported.
"""

from __future__ import annotations

import shutil
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from cs336_harness.adapter_loader import REPO_ROOT


@dataclass(frozen=True)
class Synthetic:
    adapters_tail: str = ""
    package_head: str = ""
    # Extra files inside the submission's cs336_basics/: name → file to copy from the repo.
    package_files: dict[str, Path] = field(default_factory=dict)


def write_submission(dest: Path, synthetic: Synthetic) -> Path:
    shutil.copytree(
        REPO_ROOT / "cs336_basics",
        dest / "cs336_basics",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    (dest / "tests").mkdir()
    adapters = (REPO_ROOT / "tests" / "adapters.py").read_text()
    (dest / "tests" / "adapters.py").write_text(
        adapters + "\n" + textwrap.dedent(synthetic.adapters_tail)
    )
    init = dest / "cs336_basics" / "__init__.py"
    init.write_text(textwrap.dedent(synthetic.package_head) + init.read_text())
    for name, source in synthetic.package_files.items():
        shutil.copyfile(source, dest / "cs336_basics" / name)
    return dest


CORRECT = Synthetic()

# Softmax without the max shift: exp overflows to inf on large inputs, inf/inf = nan.
WRONG_SOFTMAX = Synthetic(
    adapters_tail="""
    def run_softmax(in_features, dim):
        e = torch.exp(in_features)
        return e / e.sum(dim=dim, keepdim=True)
    """
)

# One adapter missing, one raising NotImplementedError.
NOT_IMPLEMENTED = Synthetic(
    adapters_tail="""
    del run_linear

    def run_rope(*args, **kwargs):
        raise NotImplementedError
    """
)

# SiLU loops forever in Python (pytest-timeout's SIGALRM stops it); embedding deadlocks in
# C on 3-D ids, where no signal handler can run (the watchdog ends the process).
HANGS = Synthetic(
    adapters_tail="""
    import ctypes

    def run_silu(*args, **kwargs):
        while True:
            pass

    _bundled_run_embedding = run_embedding

    def run_embedding(*args, **kwargs):
        if kwargs["token_ids"].ndim == 3:
            mutex, libc = ctypes.create_string_buffer(64), ctypes.CDLL(None)
            libc.pthread_mutex_lock(mutex)
            libc.pthread_mutex_lock(mutex)  # a default mutex, locked again: deadlock
        return _bundled_run_embedding(*args, **kwargs)
    """
)

# SwiGLU segfaults on one case, SiLU aborts the interpreter on one case.
CRASHES = Synthetic(
    adapters_tail="""
    import ctypes
    import os

    _bundled_run_swiglu, _bundled_run_silu = run_swiglu, run_silu

    def run_swiglu(*args, **kwargs):
        if kwargs["d_ff"] == 40:
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        return _bundled_run_swiglu(*args, **kwargs)

    def run_silu(*args, **kwargs):
        if kwargs["in_features"].abs().max() > 50:
            os.abort()
        return _bundled_run_silu(*args, **kwargs)
    """
)

EXIT_AT_IMPORT = Synthetic(adapters_tail="raise SystemExit(3)\n")

HANGS_AT_IMPORT = Synthetic(adapters_tail="while True:\n    pass\n")

HARD_EXIT_AT_IMPORT = Synthetic(adapters_tail="import os\nos._exit(7)\n")

IMPORT_ERROR = Synthetic(package_head="import a_module_that_does_not_exist  # noqa: F401\n")

TEN_MB = 10_000_000

# 10 MB at import, and 10 MB in every Linear test.
LOUD = Synthetic(
    adapters_tail=f"""
    import sys

    sys.stdout.write("x" * {TEN_MB} + "\\n")
    _bundled_run_linear = run_linear

    def run_linear(*args, **kwargs):
        print("y" * {TEN_MB})
        return _bundled_run_linear(*args, **kwargs)
    """
)

# Embedding first hoards 8 GiB in 256 MiB blocks: more than the grader's memory limit in
# the tests (2 GiB), less than this machine holds, so a limit that failed to apply would
# show as a pass rather than an out-of-memory machine.
MEMORY_HOG = Synthetic(
    adapters_tail="""
    _bundled_run_embedding = run_embedding

    def run_embedding(*args, **kwargs):
        hoard = [bytearray(256 << 20) for _ in range(32)]
        del hoard
        return _bundled_run_embedding(*args, **kwargs)
    """
)

# At import, rewrites one byte of the fixture directory it was given.
TAMPERS = Synthetic(
    adapters_tail="""
    import sys
    from pathlib import Path

    _given = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--fixtures-dir="))
    _target = Path(_given) / "silu.safetensors"
    _target.chmod(0o644)
    _data = _target.read_bytes()
    _target.write_bytes(_data[:-1] + bytes([_data[-1] ^ 1]))
    """
)

# Ships the committed silu fixtures inside its package and returns the stored expected
# output for any input it recognises: full marks on the stored fixtures, none on fresh ones.
CHEATS = Synthetic(
    adapters_tail="""
    from pathlib import Path

    import cs336_basics
    from safetensors.torch import load_file

    def run_silu(in_features):
        table = load_file(Path(cs336_basics.__file__).parent / "answers.safetensors")
        for key, stored in table.items():
            case, _, name = key.rpartition("/")
            if name == "in_features" and stored.shape == in_features.shape:
                if torch.equal(stored, in_features):
                    return table[f"{case}/expected"]
        return torch.zeros_like(in_features)
    """,
    package_files={"answers.safetensors": REPO_ROOT / "tests" / "fixtures" / "silu.safetensors"},
)
