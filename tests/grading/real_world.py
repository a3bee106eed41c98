"""Student checkouts shaped as real ones are, for the tests that the harness and the grader
grade a submission on its own code, and fairly.

`write_wrong_package` writes a small checkout whose own `cs336_basics` is deliberately wrong
in softmax (every output zero) and right in SiLU, imported at the top of its adapters or
only inside the `run_*` functions, through another top-level module of the checkout, with
the upstream handout's `tests/common.py` imported both ways students write it (its own copy
at the top, the harness's where the lazy one has none), and beside
traps: a `cs336_staff` package and a `tests/conftest.py` of the checkout's own that raise if
the harness ever imports them. Graded on its own package, softmax fails and SiLU passes;
graded on this repository's, softmax would pass; on the handout's stubs, both would be "not
implemented".
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path
from typing import Literal

from tests.grading import synthetic

PACKAGE = "cs336_basics"
WRONG_PACKAGE = '''
"""A student's package: SiLU right, softmax deliberately wrong."""
import torch


def silu(x):
    return x * torch.sigmoid(x)


def softmax(x, dim):
    return torch.zeros_like(x)  # the deliberate mistake: no softmax at all
'''
# Another top-level module of the checkout, which the adapters reach SiLU through.
HELPERS = '''
"""Helpers beside the package, imported by the adapters as `import helpers`."""
from cs336_basics import silu
'''
# What every variant's adapters hold: the handout's helpers, imported as students do.
COMMON_IMPORTS = """
from .common import gpt2_bytes_to_unicode
from tests.common import FIXTURES_PATH

assert gpt2_bytes_to_unicode()[ord(" ")] == "Ġ" and FIXTURES_PATH.name == "fixtures"
"""
LAZY = """
def run_silu(in_features):
    import helpers

    return helpers.silu(in_features)


def run_softmax(in_features, dim):
    from cs336_basics import softmax

    return softmax(in_features, dim)
"""
TOP = """
import helpers
from cs336_basics import softmax


def run_silu(in_features):
    return helpers.silu(in_features)


def run_softmax(in_features, dim):
    return softmax(in_features, dim)
"""
# The handout's `tests/common.py` as the top-level variant ships it (abridged); the lazy one
# ships none, and gets upstream's helpers from the harness.
OWN_COMMON = """
from pathlib import Path

FIXTURES_PATH = Path(__file__).resolve().parent / "fixtures"


def gpt2_bytes_to_unicode():
    return {32: "Ġ"}
"""
TRAP = """
raise RuntimeError("the harness imported the submission's {what}")
"""


def write_wrong_package(dest: Path, imports: Literal["lazy", "top"]) -> Path:
    """The checkout described above at `dest`; returns its adapters file."""
    files = {
        "cs336_basics/__init__.py": WRONG_PACKAGE,
        "helpers.py": HELPERS,
        "tests/__init__.py": "",
        "tests/adapters.py": COMMON_IMPORTS + (LAZY if imports == "lazy" else TOP),
        "tests/conftest.py": TRAP.format(what="tests/conftest.py"),
        "cs336_staff/__init__.py": TRAP.format(what="cs336_staff"),
    }
    if imports == "top":
        files["tests/common.py"] = OWN_COMMON
    for name, text in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(textwrap.dedent(text).lstrip())
    return dest / "tests" / "adapters.py"


# `write_upstream_shapes`: the bundled implementation, its adapters rewritten as many
# students write theirs: every import of the package inside the functions that use it, the
# handout's helpers imported both ways, a module of the checkout's own beside the package,
# and each adapter written for the calls upstream's tests make and no other (`_only`
# raises on any other, as code written for those calls alone fails on them), an adapter
# that takes apart the weights dict it is given. Correct for upstream's calls, it must keep
# every point of the default rubric; only hardening tests may fail.
UPSTREAM_SHAPES = """
# -- written against upstream's calls, as students write them ---------------------------------
import os

import numpy as np

import checkout_helpers
from .common import gpt2_bytes_to_unicode
from tests.common import FIXTURES_PATH

assert gpt2_bytes_to_unicode()[ord(" ")] == "Ġ" and FIXTURES_PATH.name == "fixtures"
_only = checkout_helpers.only
_bundled = dict(globals())


def run_linear(d_in, d_out, weights, in_features):
    _only(in_features.ndim == 3, "(batch, seq, d_in) inputs")
    return _bundled["run_linear"](d_in, d_out, weights, in_features)


def run_embedding(vocab_size, d_model, weights, token_ids):
    _only(token_ids.ndim == 2, "(batch, seq) ids")
    return _bundled["run_embedding"](vocab_size, d_model, weights, token_ids)


def run_rmsnorm(d_model, eps, weights, in_features):
    _only(in_features.ndim == 3 and in_features.dtype == torch.float32, "float32 (b, s, d)")
    return _bundled["run_rmsnorm"](d_model, eps, weights, in_features)


def run_rope(d, theta, max_seq_len, in_query_or_key, token_positions):
    _only(token_positions.ndim == 1, "(seq,) positions")
    return _bundled["run_rope"](d, theta, max_seq_len, in_query_or_key, token_positions)


def run_scaled_dot_product_attention(Q, K, V, mask=None):
    scores = (*Q.shape[:-1], K.shape[-2])
    _only(mask is not None and tuple(mask.shape) == scores, "a mask shaped like the scores")
    return _bundled["run_scaled_dot_product_attention"](Q, K, V, mask)


def run_multihead_self_attention(d_model, num_heads, q_proj_weight, k_proj_weight,
                                 v_proj_weight, o_proj_weight, in_features):
    _only(in_features.ndim == 3, "(batch, seq, d_model) inputs")
    return _bundled["run_multihead_self_attention"](
        d_model, num_heads, q_proj_weight, k_proj_weight, v_proj_weight, o_proj_weight,
        in_features)


def run_multihead_self_attention_with_rope(d_model, num_heads, max_seq_len, theta,
                                           q_proj_weight, k_proj_weight, v_proj_weight,
                                           o_proj_weight, in_features, token_positions):
    _only(token_positions.shape[0] == 1, "(1, seq) positions")
    return _bundled["run_multihead_self_attention_with_rope"](
        d_model, num_heads, max_seq_len, theta, q_proj_weight, k_proj_weight, v_proj_weight,
        o_proj_weight, in_features, token_positions[0])


def run_transformer_block(d_model, num_heads, d_ff, max_seq_len, theta, weights, in_features):
    own = {name: weights.pop(name) for name in list(weights)}  # takes the dict apart
    return _bundled["run_transformer_block"](
        d_model, num_heads, d_ff, max_seq_len, theta, own, in_features)


def run_transformer_lm(vocab_size, context_length, d_model, num_layers, num_heads, d_ff,
                       rope_theta, weights, in_indices):
    own = {name: weights.pop(name) for name in list(weights)}
    return _bundled["run_transformer_lm"](
        vocab_size, context_length, d_model, num_layers, num_heads, d_ff, rope_theta, own,
        in_indices)


def run_silu(x):
    from cs336_basics.py312 import first

    return first([_bundled["run_silu"](x)])


def run_softmax(x, dim):
    return _bundled["run_softmax"](x, dim)


def run_cross_entropy(logits, targets):
    _only(logits.ndim == 2, "(batch, vocab) logits")
    return _bundled["run_cross_entropy"](logits, targets)


def run_gradient_clipping(parameters, max_l2_norm):
    _only(isinstance(parameters, tuple), "a tuple of parameters")
    _only(all(p.requires_grad == (p.grad is not None) for p in parameters), "frozen, no grad")
    return _bundled["run_gradient_clipping"](parameters, max_l2_norm)


class _AdamW(_bundled["get_adamw_cls"]()):
    def __init__(self, params, **hyperparameters):
        params = list(params)
        _only(all(isinstance(p, torch.Tensor) for p in params), "model.parameters()")
        super().__init__(params, **hyperparameters)

    def step(self, closure=None):
        every = [p for group in self.param_groups for p in group["params"]]
        _only(all(p.grad is not None for p in every), "a gradient for every parameter")
        return super().step(closure)


def get_adamw_cls():
    return _AdamW


def run_get_batch(dataset, batch_size, context_length, device):
    _only(type(dataset) is np.ndarray and isinstance(device, str), "an array and a str")
    return _bundled["run_get_batch"](dataset, batch_size, context_length, device)


def run_save_checkpoint(model, optimizer, iteration, out):
    _only(isinstance(out, os.PathLike), "a path")
    return _bundled["run_save_checkpoint"](model, optimizer, iteration, out)


def run_load_checkpoint(src, model, optimizer):
    _only(isinstance(src, os.PathLike), "a path")
    return _bundled["run_load_checkpoint"](src, model, optimizer)


def run_train_bpe(input_path, vocab_size, special_tokens, **kwargs):
    with input_path.open("rb") as corpus:  # a pathlib.Path's method: a str has none
        _only(corpus.readable() and len(special_tokens) > 0, "special tokens")
    from cs336_basics import parallel_bpe

    return parallel_bpe.train(input_path, vocab_size, special_tokens, LANE_CPUS)


class _Tokenizer:
    def __init__(self, tokenizer):
        self.encode, self.decode = tokenizer.encode, tokenizer.decode
        self._encode_iterable = tokenizer.encode_iterable

    def encode_iterable(self, iterable):
        _only(hasattr(iterable, "readline"), "an open file")
        return self._encode_iterable(iterable)


def get_tokenizer(vocab, merges, special_tokens=None):
    _only(special_tokens is None or len(special_tokens) > 0, "a list of tokens, or None")
    return _Tokenizer(_bundled["get_tokenizer"](vocab, merges, special_tokens))
"""
UPSTREAM_HELPERS = '''
"""A module of the checkout's own, beside its package."""


def only(condition, what):
    if not condition:
        raise ValueError(f"written for upstream's calls ({what}); this is not one")
'''


# Students' habits beside upstream's calls, each seen in public solutions: a monitoring
# helper imported by the package at the top and used by no test, whose packages the grading
# environment lacks (one imported in a try that handles ImportError); Python 3.12 syntax; and
# BPE's pre-tokenisation in a `multiprocessing.Pool` of `os.cpu_count()` processes, with a
# lock and a queue, writing a pickle cache beside the package and into its working directory.
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
PY312 = """\
type Vocab = dict[int, bytes]


def first[T](items: list[T]) -> T:
    return items[0]
"""
PARALLEL_BPE = """\
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


def train(input_path, vocab_size, special_tokens, cpus):
    assert os.cpu_count() in cpus, f"os.cpu_count() is {os.cpu_count()}, not the lane's {cpus}"
    special_tokens = list(dict.fromkeys(special_tokens))
    text = Path(input_path).read_text(encoding="utf-8")
    pattern = special_token_pattern(special_tokens)
    pieces = [p for p, special in split_at_special_tokens(text, pattern) if not special]
    with multiprocessing.Pool(os.cpu_count()) as pool:
        counts = sum(pool.map(_count, pieces), Counter())
        # Read while the workers live, then let them end: leaving the block terminates
        # them, which on a busy host loses what their queue's thread had yet to write, or
        # kills one holding the queue's lock (the next call's puts then wait forever).
        assert sum(_DONE.get(timeout=10) for _ in pieces) == sum(map(len, pieces))
        pool.close()
        pool.join()
    for cache in (Path(__file__).parent / ".cache.pkl", Path("counts.pkl")):
        cache.write_bytes(pickle.dumps(counts))
        assert pickle.loads(cache.read_bytes()) == counts
    base = 256 + len(special_tokens)
    merges = bpe_training.learn_merges(counts, vocab_size - base)
    vocab = {i: bytes([i]) for i in range(256)}
    vocab |= {256 + j: s.encode() for j, s in enumerate(special_tokens)}
    vocab |= {base + k: a + b for k, (a, b) in enumerate(merges)}
    return vocab, merges
"""
# What the sandbox and the environment do cost, each named: the absent module used (by
# softmax), a file system that is read-only outside the working copy, /tmp and /dev/shm (in
# SiLU); and a helper module beside the package whose F.linear the rules name.
MISFITS = synthetic.Synthetic(
    package_head="from cs336_basics import monitor\n",
    files={
        "cs336_basics/monitor.py": MONITOR,
        "helpers.py": """\
            import torch.nn.functional as F


            def linear(x, w):
                return F.linear(x, w)
            """,
    },
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


def lazy_imports(source: str) -> str:
    """`source` with its top-level `from cs336_basics import (...)` moved into every
    top-level function, after its docstring."""
    tree = ast.parse(source)
    [found] = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == PACKAGE]
    line = f"from {PACKAGE} import {', '.join(alias.name for alias in found.names)}"
    inserts = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            body = node.body
            documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            first = body[1] if documented and len(body) > 1 else body[0]
            inserts[first.lineno - 1] = " " * first.col_offset + line + "  # noqa\n"
    lines = source.splitlines(keepends=True)
    kept = [
        inserts.get(i, "") + text
        for i, text in enumerate(lines)
        if not found.lineno - 1 <= i < found.end_lineno
    ]
    return "".join(kept)


def write_upstream_shapes(dest: Path, cpus: tuple[int, ...]) -> Path:
    """The submission described above at `dest`, with the habits above, graded where its
    lane has one of `cpus` CPUs; returns `dest`."""
    files = {"monitor.py": MONITOR, "py312.py": PY312, "parallel_bpe.py": PARALLEL_BPE}
    habits = synthetic.Synthetic(
        package_head="from cs336_basics import monitor\n",
        files={f"cs336_basics/{name}": text for name, text in files.items()},
    )
    synthetic.write_submission(dest, habits)
    adapters = dest / "tests" / "adapters.py"
    shapes = textwrap.dedent(UPSTREAM_SHAPES) + f"\nLANE_CPUS = {cpus}\n"
    adapters.write_text(lazy_imports(adapters.read_text()) + shapes)
    (dest / "tests" / "__init__.py").write_text("")
    (dest / "checkout_helpers.py").write_text(textwrap.dedent(UPSTREAM_HELPERS).lstrip())
    return dest


# `write_upstream_shapes_without_residual`: the submission above with upstream's adapters alone
# (the bundled adapters' `get_transformer_lm` and `get_transformer_block`, which upstream's
# handout has not, deleted) and its package's block missing the residual around attention,
# h = attn(ln1(x)): its block and LM fail, and the first difference is found by calling its
# component adapters in the sandbox, stage by stage.
RESIDUAL = "h = x + self.dropout(self.attn(self.ln1(x), token_positions))"
UPSTREAM_ADAPTERS_ONLY = "\ndel get_transformer_lm, get_transformer_block\n"


def write_upstream_shapes_without_residual(dest: Path, cpus: tuple[int, ...]) -> Path:
    """The submission described above at `dest`; returns `dest`."""
    write_upstream_shapes(dest, cpus)
    block = dest / PACKAGE / "transformer_block.py"
    source = block.read_text()
    assert source.count(RESIDUAL) == 1, "the bundled block is no longer written as expected"
    block.write_text(source.replace(RESIDUAL, RESIDUAL.replace("x + ", "", 1)))
    adapters = dest / "tests" / "adapters.py"
    adapters.write_text(adapters.read_text() + UPSTREAM_ADAPTERS_ONLY)
    return dest
