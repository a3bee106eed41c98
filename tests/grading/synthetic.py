"""Synthetic submissions: the bundled implementation, copied, with one behaviour changed.

A submission is a copy of `cs336_basics/` and `tests/adapters.py`. Code appended to the
adapters file replaces a `run_*` function (a later `def` wins) or runs at import; code put
at the head of `cs336_basics/__init__.py` runs when the package is imported.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from cs336_harness.paths import REPO_ROOT


@dataclass(frozen=True)
class Synthetic:
    adapters_tail: str = ""
    package_head: str = ""
    # Extra files inside the submission's cs336_basics/: name → file to copy from the repo.
    package_files: dict[str, Path] = field(default_factory=dict)
    # Extra files anywhere in the submission: path relative to its top → text (dedented).
    files: dict[str, str] = field(default_factory=dict)


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
    for name, text in synthetic.files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(textwrap.dedent(text))
    return dest


CORRECT = Synthetic()

# The bundled implementation's training command imports rich (its progress bar) and
# matplotlib (its loss curve), the grader's packages and no course's: every copy of it is
# told so in a note, which the tests of other notes leave aside.
REFERENCE_ABSENT = "imports modules the grading environment lacks: rich (cs336_basics/training/"


def notes_of_its_own(notes: Iterable[str]) -> list[str]:
    """`notes` (with or without "note: ") but the one every copy of the bundled
    implementation gets (`REFERENCE_ABSENT`)."""
    return [n for n in notes if not n.removeprefix("note: ").startswith(REFERENCE_ABSENT)]


# Softmax without the max shift: exp overflows to inf on large inputs, inf/inf = nan.
WRONG_SOFTMAX = Synthetic(
    adapters_tail="""
    def run_softmax(in_features, dim):
        e = torch.exp(in_features)
        return e / e.sum(dim=dim, keepdim=True)
    """
)

# An LM whose last block's feed-forward output is doubled: every LM test fails, and the
# judge names that sublayer as the first difference from the oracle's stored trace.
WRONG_LM_FFN = Synthetic(
    adapters_tail="""
    class _DoubledLastFFN(TransformerLM):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            ffn = self.layers[-1].ffn
            forward = ffn.forward
            ffn.forward = lambda x: 2 * forward(x)

    TransformerLM = _DoubledLastFFN
    """
)

# One adapter missing, one raising NotImplementedError, and one whose module has no forward
# (torch raises NotImplementedError below the adapter).
NOT_IMPLEMENTED = Synthetic(
    adapters_tail="""
    del run_linear

    def run_rope(*args, **kwargs):
        raise NotImplementedError

    class _SiLUWithoutForward(torch.nn.Module):
        pass

    def run_silu(in_features):
        return _SiLUWithoutForward()(in_features)
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
        if (args[0] if args else kwargs["in_features"]).abs().max() > 50:
            os.abort()
        return _bundled_run_silu(*args, **kwargs)
    """
)

EXIT_AT_IMPORT = Synthetic(adapters_tail="raise SystemExit(3)\n")

HANGS_AT_IMPORT = Synthetic(adapters_tail="while True:\n    pass\n")

HARD_EXIT_AT_IMPORT = Synthetic(adapters_tail="import os\nos._exit(7)\n")

# A module of its own package that is not there (a third-party module the environment lacks
# would get a stand-in instead, `stand_ins`: test_real_world.py).
IMPORT_ERROR = Synthetic(package_head="import cs336_basics.a_module_that_does_not_exist\n")

SYNTAX_ERROR = Synthetic(adapters_tail="def run_half_written(:\n")

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

# Ships the committed silu fixtures inside its package and returns the stored expected
# output for any input it recognises: full marks on the stored fixtures, none on fresh ones.
# For the backward case it returns x times the stored slope (expected gradient / projection),
# whose gradient is the stored one.
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
                    if f"{case}/expected" in table:
                        return table[f"{case}/expected"]
                    grad = table[f"{case}/expected_grad.in_features"]
                    return in_features * (grad / table[f"{case}/grad_projection"])
        return torch.zeros_like(in_features)
    """,
    package_files={"answers.safetensors": REPO_ROOT / "tests" / "fixtures" / "silu.safetensors"},
)


# The fused attention kernel, reached by a name built at run time: no reading of the source
# follows it, but the worker sees the call.
HIDES_A_FORBIDDEN_CALL = Synthetic(
    adapters_tail="""
    def run_scaled_dot_product_attention(Q, K, V, mask=None):
        fused = getattr(torch.nn.functional, "scaled_" + "dot_product_attention")
        return fused(Q, K, V, attn_mask=mask)
    """
)


# -- attacks on the verdict: each is wrong in softmax and tries to get its point anyway --

WRONG = "torch.zeros_like(in_features)"
SOFTMAX_HEADER = """
    import torch

    def run_softmax(in_features, dim):
"""


def _softmax(body: str, prelude: str = "") -> Synthetic:
    """A submission whose softmax is `body` (indented code returning a tensor), after
    `prelude` at import; everything else is the bundled implementation."""
    code = textwrap.dedent(prelude) + textwrap.dedent(SOFTMAX_HEADER)
    return Synthetic(adapters_tail=code + textwrap.indent(textwrap.dedent(body), "    "))


# Makes every comparison torch offers say "equal".
PATCHES_COMPARISON = _softmax(
    f"return {WRONG}",
    prelude="""
    import torch
    import torch.testing

    def _always(*args, **kwargs):
        return True

    torch.isclose = lambda a, b, **kw: torch.ones_like(a, dtype=torch.bool)
    torch.allclose = torch.equal = _always
    torch.testing.assert_close = lambda *a, **kw: None
    torch.Tensor.__eq__ = lambda self, other: torch.ones_like(self, dtype=torch.bool)
    """,
)

# Turns every failure pytest reports into a pass.
PATCHES_PYTEST = _softmax(
    f"return {WRONG}",
    prelude="""
    import _pytest.outcomes
    import _pytest.reports
    import pytest

    pytest.fail = _pytest.outcomes.fail = lambda *a, **kw: None
    _pytest.reports.TestReport.failed = property(lambda self: False)
    _pytest.reports.TestReport.passed = property(lambda self: True)
    """,
)


# Returns the stored expected output for an input found in one of `places` (paths to
# softmax.safetensors fixture files), if any can be read.
LOOKUP = f"""
from safetensors.torch import load_file

for place in places:
    try:
        table = load_file(place)
    except Exception:
        continue
    for key, stored in table.items():
        case, _, name = key.rpartition("/")
        if name == "in_features" and torch.equal(stored, in_features):
            answer = table[f"{{case}}/expected"]
            # Two cases may share an input and differ in `dim`: pick the right one.
            if torch.allclose(answer.sum(dim=dim), torch.tensor(1.0)):
                return answer
return {WRONG}
"""


def _stored_answers(find_places: str, prelude: str = "") -> Synthetic:
    return _softmax(textwrap.dedent(find_places) + LOOKUP, prelude)


def reads_fixtures(repo_fixtures: Path) -> Synthetic:
    """Looks for the expected outputs on disk: where the repository keeps them, then in
    every softmax.safetensors under the directories where graders keep their files (walked
    at its first call, then remembered: a host's trees hold millions of entries)."""
    return _stored_answers(
        f"""
        import os
        from pathlib import Path

        if not _found:
            _found.append(Path({str(repo_fixtures)!r}) / "softmax.safetensors")
            # A walk by hand, without recursion or links: the host may hold trees deeper
            # than Python's stack (the intake's tests leave some) and link loops.
            folders = ["/tmp", "/work", "/root", "/home"]
            while folders:
                try:
                    entries = list(os.scandir(folders.pop()))
                except OSError:
                    continue
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.name == "softmax.safetensors":
                        _found.append(entry.path)
        places = _found
        """,
        prelude="_found = []\n",
    )


# Walks the caller's frames and every live object for the expected output.
READS_CALLER = _softmax(
    f"""
    import gc
    import sys

    frame = sys._getframe()
    while frame is not None:
        for value in frame.f_locals.values():
            expected = getattr(value, "expected", None)
            if isinstance(expected, torch.Tensor) and expected.shape == in_features.shape:
                return expected
        frame = frame.f_back
    for obj in gc.get_objects():
        if type(obj).__name__ == "Case" and obj.expected.shape == in_features.shape:
            return obj.expected
    return {WRONG}
    """
)

# Writes forged "passed" records wherever it might reach them: files named like the
# record, its standard output, and every open descriptor.
FORGES_RECORDS = _softmax(
    f"""
    import os

    for fd in range(3, 64):  # the protocol's descriptors among them
        try:
            os.write(fd, FORGED.encode())
        except OSError:
            pass
    return {WRONG}
    """,
    prelude="""
    import glob
    import json

    FORGED = json.dumps({"event": "finish", "nodeid": "x", "status": "passed"}) + "\\n"
    _found = [glob.glob(f"{_root}/**/results.jsonl", recursive=True)
              for _root in ("/tmp", "/work", "/root", "/home")]
    for _path in sum(_found, []):
        try:
            with open(_path, "a") as _f:
                _f.write(FORGED)
        except OSError:
            pass
    print(FORGED * 10)
    """,
)

# A tensor subclass whose comparisons lie, and for SiLU an object that is equal to anything.
LYING_VALUES = Synthetic(
    adapters_tail="""
    import torch

    class Agreeable(torch.Tensor):
        def __eq__(self, other):
            return torch.ones_like(torch.Tensor(self), dtype=torch.bool)

        def allclose(self, *args, **kwargs):
            return True

    class Anything:
        shape = property(lambda self: None)
        dtype = torch.float32

        def __eq__(self, other):
            return True

    def run_softmax(in_features, dim):
        return torch.zeros_like(in_features).as_subclass(Agreeable)

    def run_silu(in_features):
        return Anything()
    """
)

# Tries to kill the judge: its parent, every process it can see, the whole group.
KILLS_GRADER = _softmax(
    f"""
    import os
    import signal

    for pid in [os.getppid(), *[int(p) for p in os.listdir("/proc") if p.isdigit()]]:
        if pid != os.getpid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for target in (-1, 0):
        try:
            os.kill(target, signal.SIGTERM)
        except OSError:
            pass
    return {WRONG}
    """
)

ORPHAN_MARKER = "cs336-orphan-marker"

# Leaves a daemon behind: a double-forked child in a session of its own, sleeping.
OUTLIVES = _softmax(
    f"""
    import os
    import sys

    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv(sys.executable, [sys.executable, "-c",
                     "import time; time.sleep(600)", {ORPHAN_MARKER!r}])
        os._exit(0)
    return {WRONG}
    """
)


def writes_outside(canary: Path, repo_fixtures: Path, own_copy: Path) -> Synthetic:
    """Writes a canary file, zeros over the stored expected outputs, and into its own files."""
    return _softmax(
        f"""
        from pathlib import Path

        targets = [Path({str(canary)!r}), Path({str(repo_fixtures)!r}) / "softmax.safetensors",
                   Path({str(own_copy)!r}) / "cs336_basics" / "written.txt",
                   Path.home() / "written.txt"]
        for target in targets:
            try:
                target.write_bytes(b"written from a submission")
            except OSError:
                pass
        return {WRONG}
        """
    )


def raids_neighbour(victim: Path) -> Synthetic:
    """Borrows the victim's softmax if it can import it, and breaks the victim's adapters."""
    return _softmax(
        f"""
        import importlib.util
        from pathlib import Path

        victim = Path({str(victim)!r})
        try:
            spec = importlib.util.spec_from_file_location(
                "victim_softmax", victim / "cs336_basics" / "softmax.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            answer = module.softmax(in_features, dim)
        except Exception:
            answer = {WRONG}
        try:
            with open(victim / "tests" / "adapters.py", "a") as f:
                f.write("\\nraise SystemExit('sabotaged')\\n")
        except OSError:
            pass
        return answer
        """
    )


def phones_home(port: int) -> Synthetic:
    """Asks a helper listening on the grader's loopback for the answer: the right softmax
    when it gets through."""
    return _softmax(
        f"""
        import socket

        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        except OSError:
            return {WRONG}
        e = torch.exp(in_features - in_features.amax(dim=dim, keepdim=True))
        return e / e.sum(dim=dim, keepdim=True)
        """
    )


# What the user tier's attacks on the host's shared temp folders name their files.
LEFTOVER = "cs336-leftover"
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
# A fill of /dev/shm: more files and bytes than a worker's private /tmp may hold.
FILL_FILES, FILL_BYTES = 20_000, 150 << 20

# Leaves files, world-readable, in every shared temp folder (standard-library look-alikes
# and a .pth in a folder of their own, as a trap for a Python started there) and fills
# /dev/shm; its softmax is right only when the fill went through.
LEAVES_FILES = _softmax(
    f"""
    import os

    for folder in {SHARED_TEMP!r}:
        try:
            trap = os.path.join(folder, f"{LEFTOVER}-{{os.getpid()}}")
            os.makedirs(trap, exist_ok=True)
            for name in ("torch.py", "csv.py", "sitecustomize.py", "planted.pth"):
                with open(os.path.join(trap, name), "w") as f:
                    f.write("# left by a submission\\n")
            with open(f"{{trap}}-note.txt", "w") as f:
                f.write("a secret left for the next submission")
        except OSError:
            pass
    fill = f"/dev/shm/{LEFTOVER}-fill-{{os.getpid()}}"
    try:
        os.makedirs(fill, exist_ok=True)
        chunk = b"x" * ({FILL_BYTES} // {FILL_FILES})
        for i in range({FILL_FILES}):
            with open(f"{{fill}}/{{i}}", "wb") as f:
                f.write(chunk)
    except OSError:
        return {WRONG}
    e = torch.exp(in_features - in_features.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
    """
)

# Reads what other submissions left in the shared temp folders: the right softmax when it
# found any of it.
READS_LEFTOVERS = _softmax(
    f"""
    import os

    found = []
    for folder in {SHARED_TEMP!r}:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.startswith("{LEFTOVER}") and name.endswith(".txt"):
                try:
                    with open(os.path.join(folder, name)) as f:
                        found.append(f.read())
                except OSError:
                    pass
    if not found:
        return {WRONG}
    e = torch.exp(in_features - in_features.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
    """
)

# Shows the inputs it was handed where the student reads: a fingerprint of each softmax
# input in its failure message.
FINGERPRINT = "inputs fingerprint"
REPORTS_INPUTS = _softmax(
    f"""
    import hashlib

    digest = hashlib.sha256(in_features.detach().contiguous().numpy().tobytes()).hexdigest()
    raise RuntimeError(f"{FINGERPRINT} {{digest[:16]}}")
    """
)


def computes_nothing(kind: str) -> Synthetic:
    """Every adapter answering as `tests/evidence/degenerate/`'s `kind` does."""
    answers = REPO_ROOT / "tests" / "evidence" / "degenerate" / "_answers.py"
    code = answers.read_text().replace("from __future__ import annotations\n", "")
    return Synthetic(adapters_tail=f"{code}\nglobals().update(adapters({kind!r}))\n")


# Returns 300 MiB from softmax: over the grader's 256 MiB cap on a reply.
HUGE_REPLY = _softmax("return torch.zeros(300 << 18)")


# Ships a link to the stored fixtures (and a FIFO, which would block a naive copy).
LINKS = _stored_answers(
    """
    from pathlib import Path

    import cs336_basics

    places = [Path(cs336_basics.__file__).parent / "answers" / "softmax.safetensors"]
    """
)


# -- submissions that take from their neighbours or from the host ---------------------

# Starts 30 shells that spin forever, each in a session of its own (the kernel's autogroups
# share a CPU between sessions, so 30 sessions take 30 shares) and at the lowest priority
# (which counts only within a cgroup, where they share the worker's), and answers every
# call 0.05 s late, so that its grading outlasts both neighbours' together (on one CPU
# here: 56 s, against 17 s and 13 s; 0.1 s late, 67 s); otherwise correct.
# A neighbour graded beside it must keep its grade: lanes weigh the same, and autogroups
# do not apply inside them.
BUSY = 30
KEEPS_HOST_BUSY = Synthetic(
    adapters_tail=f"""
    import functools
    import os
    import time

    for _ in range({BUSY}):
        os.posix_spawn(
            "/usr/bin/nice",
            ["nice", "-n", "19", "/bin/sh", "-c", "while :; do :; done"],
            {{}},
            setsid=True,
        )

    def _late(function):
        @functools.wraps(function)
        def late(*args, **kwargs):
            time.sleep(0.05)
            return function(*args, **kwargs)
        return late

    for _name in [n for n in globals() if n.startswith("run_")]:
        globals()[_name] = _late(globals()[_name])
    """
)


# Each holds 1.5 GiB by a route that RLIMIT_DATA does not count, at import, and makes the
# import fail unless it really held it all: graded with `--memory-limit 1G`, it scores
# full marks exactly when the limit did not bound it.
ESCAPE = 3 << 29
_HOLD_CHECK = """
    if _held < {size}:
        raise SystemExit(f"held only {{_held}} bytes")
    print(f"held {{_held}} bytes beyond the limit", flush=True)
"""


def _holds(code: str) -> Synthetic:
    return Synthetic(
        adapters_tail=code.replace("SIZE", str(ESCAPE)) + _HOLD_CHECK.format(size=ESCAPE)
    )


SHARED_MAPPING = _holds(
    """
    import mmap

    _map = mmap.mmap(-1, SIZE, flags=mmap.MAP_SHARED)
    for _offset in range(0, SIZE, 4096):
        _map[_offset] = 1
    _held = SIZE
    """
)

# In memfds of 32 MiB each: one memfd is a file, which RLIMIT_FSIZE caps, so many of them.
MEMFD = _holds(
    """
    import os

    _block, _fds = b"x" * (1 << 20), []
    for _ in range(SIZE >> 25):
        _fds.append(os.memfd_create("hoard"))
        for _ in range(32):
            os.write(_fds[-1], _block)
    _held = sum(os.fstat(fd).st_size for fd in _fds)
    """
)

SYSV_SHM = _holds(
    """
    import ctypes

    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.shmat.restype = ctypes.c_void_p
    _id = _libc.shmget(0, ctypes.c_size_t(SIZE), 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
    _address = _libc.shmat(_id, None, 0)
    ctypes.memset(_address, 1, SIZE)
    _held = SIZE
    """
)

# Twelve children of 128 MiB each: each well under RLIMIT_DATA, together past the limit.
# The parent waits until each says it holds its share.
CHILDREN = _holds(
    """
    import os
    import time

    _held, _share = 0, SIZE // 12
    for _ in range(12):
        _read, _write = os.pipe()
        if os.fork() == 0:
            try:
                _hoard = b"x" * _share  # touched: an untouched bytearray holds no pages
                os.write(_write, b"1")
                time.sleep(3600)
            finally:
                os._exit(1)
        os.close(_write)
        if os.read(_read, 1) == b"1":
            _held += _share
    """
)

# 300,000 empty files in /tmp: 64 MiB of tmpfs bytes but ~330 MiB of the kernel's memory.
# Like the others, its import fails unless it made them all.
MANY_FILES = Synthetic(
    adapters_tail="""
    for _made in range(300_000):
        try:
            open(f"/tmp/f{_made}", "w").close()
        except OSError as error:
            raise SystemExit(f"made {_made} files in /tmp, then: {error.strerror}") from None
    """
)


# -- the cost evidence, handed in ------------------------------------------------------

_EVIDENCE_IMPORT = re.compile(
    r"^from tests\.evidence\.(?:cost|wrong)\.(?P<module>_\w+) import (?P<names>.+)$", re.M
)


def cost_evidence(stem: str) -> Synthetic:
    """`tests/evidence/cost/<stem>.py` as a student hands it in: its adapters after the
    bundled ones, the helper module it imports copied into its own `cs336_basics`."""
    source = (REPO_ROOT / "tests" / "evidence" / "cost" / f"{stem}.py").read_text()
    source = source.replace("from tests.adapters import *  # noqa: F403\n", "")
    helpers = {
        f"{m['module']}.py": next(
            p
            for folder in ("cost", "wrong")
            if (p := REPO_ROOT / "tests" / "evidence" / folder / f"{m['module']}.py").is_file()
        )
        for m in _EVIDENCE_IMPORT.finditer(source)
    }
    tail = _EVIDENCE_IMPORT.sub(r"from cs336_basics.\g<module> import \g<names>", source)
    return Synthetic(adapters_tail=tail, package_files=helpers)
