"""The sandbox runs ordinary student code: a correct submission written with the habits of
real students' code keeps full marks beside a control, and what the sandbox or the
environment does cost a submission is named in its message.

Each habit below was seen in public solutions of the upstream assignment: pre-tokenisation
in a `multiprocessing.Pool` sized by `os.cpu_count()` (with a lock and a queue), a cache
written beside the package and into the working directory, a module-level import of a
package the grading environment lacks in a file no test needs, and Python 3.12 syntax.
"""

from __future__ import annotations

import sys

import pytest

from cs336_harness.grading import cgroups
from tests.grading import synthetic
from tests.grading.conftest import GradingRun, family_statuses, grade, statuses

pytestmark = pytest.mark.grading

# A monitoring helper as students write them: imported by the package, used by no test.
MONITOR = """\
    import pynvml
    from omegaconf import DictConfig

    try:
        import heapdict
    except ImportError:
        heapdict = None


    class RunConfig(DictConfig):
        pass


    def gpu_memory(config: DictConfig | None = None) -> int:
        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0)).used
    """

# Python 3.12's type statement and generic function syntax: a SyntaxError on 3.11.
PY312 = """\
    type Vocab = dict[int, bytes]


    def first[T](items: list[T]) -> T:
        return items[0]
    """

# BPE training with parallel pre-tokenisation, as the handout suggests: the text cut at the
# special tokens, each piece counted in a Pool, a lock and a queue around the counting, and
# a pickle cache beside the package and in the working directory.
POOL_BPE = """
    import multiprocessing
    import os
    import pickle
    from collections import Counter
    from pathlib import Path

    from cs336_basics import bpe_training
    from cs336_basics.tokenizer import special_token_pattern, split_at_special_tokens

    _LOCK = multiprocessing.Lock()
    _DONE = multiprocessing.Queue()


    def _count(piece):
        with _LOCK:
            counts = bpe_training._count_pretokens(piece, [])
        _DONE.put(len(piece))
        return counts


    def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
        assert os.cpu_count() == {cpus}, f"os.cpu_count() is {{os.cpu_count()}}, not {cpus}"
        special_tokens = list(dict.fromkeys(special_tokens))
        text = Path(input_path).read_text(encoding="utf-8")
        pattern = special_token_pattern(special_tokens)
        pieces = [p for p, special in split_at_special_tokens(text, pattern) if not special]
        with multiprocessing.Pool(os.cpu_count()) as pool:
            counts = sum(pool.map(_count, pieces), Counter())
        assert sum(_DONE.get(timeout=10) for _ in pieces) == sum(map(len, pieces))
        for cache in (Path(bpe_training.__file__).parent / ".cache.pkl", Path("counts.pkl")):
            cache.write_bytes(pickle.dumps(counts))
            assert pickle.loads(cache.read_bytes()) == counts
        base = 256 + len(special_tokens)
        merges = bpe_training.learn_merges(counts, vocab_size - base)
        vocab = {{i: bytes([i]) for i in range(256)}}
        vocab |= {{256 + j: s.encode() for j, s in enumerate(special_tokens)}}
        vocab |= {{base + k: a + b for k, (a, b) in enumerate(merges)}}
        return vocab, merges


    def run_silu(in_features):
        from cs336_basics.py312 import first

        return first([in_features]) * torch.sigmoid(in_features)
    """

# A helper module beside the package, as students add them: its uses count for the rules.
HELPERS = """\
    import torch.nn.functional as F


    def linear(x, w):
        return F.linear(x, w)
    """

# What the sandbox and the environment do cost: a module that is absent, and a file system
# that is read-only outside the working copy, /tmp and /dev/shm.
MISFITS = synthetic.Synthetic(
    package_head="from cs336_basics import monitor\n",
    files={"cs336_basics/monitor.py": MONITOR, "helpers.py": HELPERS},
    adapters_tail="""
    def run_linear(d_in, d_out, weights, in_features):
        import helpers

        return helpers.linear(in_features, weights)

    def run_softmax(in_features, dim):
        from cs336_basics.monitor import gpu_memory

        gpu_memory()


    def run_silu(in_features):
        open("/usr/lib/cs336-cache.txt", "w")
    """,
)


def ordinary(cpus: int) -> synthetic.Synthetic:
    return synthetic.Synthetic(
        package_head="from cs336_basics import monitor\n",
        files={"cs336_basics/monitor.py": MONITOR, "cs336_basics/py312.py": PY312},
        adapters_tail=POOL_BPE.format(cpus=cpus),
    )


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> GradingRun:
    root = tmp_path_factory.mktemp("ordinary")
    # Two lanes: with cgroups each has half of this process's CPUs by weight, without them
    # the CPUs it is pinned to (`cgroups.lane_cpu_count`).
    groups = cgroups.set_up(1)
    weighted = groups.enabled
    groups.remove()
    cpus = min(cgroups.lane_cpu_count(lane, 2, weighted) for lane in range(2))
    if cpus != max(cgroups.lane_cpu_count(lane, 2, weighted) for lane in range(2)):
        pytest.skip("the two lanes have different CPU counts on this host")
    submissions = root / "submissions"
    synthetic.write_submission(submissions / "control", synthetic.CORRECT)
    synthetic.write_submission(submissions / "ordinary", ordinary(cpus))
    synthetic.write_submission(submissions / "misfits", MISFITS)
    return grade(submissions, "-j2", "--stored-inputs", out=root / "out")


def test_ordinary_code_keeps_full_marks_beside_a_control(graded: GradingRun):
    assert graded.returncode == 0, graded.stderr
    control = graded.results("control")
    assert control["score"] == control["max_score"]
    results = graded.results("ordinary")
    failed = {n: s for n, s in statuses(results).items() if s != "passed"}
    if sys.version_info >= (3, 12):
        assert not failed, [
            t["output"] for t in results["tests"] if t["extra_data"]["status"] != "passed"
        ]
        assert results["score"] == control["score"]
    else:  # the type statement is a SyntaxError, which says on which Python
        assert {n.rpartition("::")[0] for n in failed} == {"tests/families/test_silu.py"}
        outputs = [t["output"] for t in results["tests"] if t["extra_data"]["family"] == "silu"]
        assert all("the grader runs Python 3.11" in o for o in outputs)


def test_each_absent_import_is_listed_and_fails_only_its_users(graded: GradingRun):
    for name in ("ordinary", "misfits"):
        output = graded.results(name)["output"]
        assert (
            "imports modules the grading environment lacks: pynvml (cs336_basics/monitor.py:1), "
            "omegaconf (cs336_basics/monitor.py:2);" in output
        ), output
        assert "heapdict" not in output  # imported in a try that handles ImportError
    results = graded.results("misfits")
    assert family_statuses(results, "softmax") == {"failed"}
    for test in results["tests"]:
        if test["extra_data"]["family"] == "softmax":
            assert (
                "the grading environment has no module 'pynvml' (imported at "
                "cs336_basics/monitor.py:1); it offers Python's standard library and einops"
            ) in test["output"]


def test_a_permission_error_from_the_sandbox_says_so(graded: GradingRun):
    results = graded.results("misfits")
    assert family_statuses(results, "silu") == {"failed"}
    for test in results["tests"]:
        if test["extra_data"]["family"] == "silu":
            assert "/usr/lib/cs336-cache.txt" in test["output"]
            assert (
                "only the working directory (a copy of the submission), /tmp and /dev/shm"
                in (test["output"])
            )
    others = {"softmax", "silu"}
    assert all(
        t["extra_data"]["status"] == "passed"
        for t in results["tests"]
        if t["extra_data"]["family"] not in others
    )


def test_a_module_beside_the_package_is_read_for_the_rules(graded: GradingRun):
    rules = graded.results("misfits")["extra_data"]["rules"]
    assert "helpers.py:5: torch.nn.functional.linear" in rules["forbidden"]
    assert any("helpers.py:5" in site for site in rules["called"]), rules["called"]
