"""The static scan for the assignment's rules: every route to a forbidden definition that a
reading can follow is found, with its line; the bundled implementation has none."""

from __future__ import annotations

import pytest

from cs336_harness.adapter_loader import REPO_ROOT
from cs336_harness.rules.policy import DEFAULT
from cs336_harness.rules.static_scan import scan_source, scan_submission


def names(source: str) -> list[tuple[int, str]]:
    return [(f.line, f.name) for f in scan_source(source.encode(), "x.py")]


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("import torch\ny = torch.nn.functional.silu(x)", [(2, "torch.nn.functional.silu")]),
        ("import torch.nn.functional as F\nF.gelu(x)", [(2, "torch.nn.functional.gelu")]),
        (
            "from torch.nn import functional as F\nF.softmax(x, -1)",
            [(2, "torch.nn.functional.softmax")],
        ),
        (
            "from torch import nn\nclass L(nn.Module):\n    pass\nnn.Linear(2, 3)",
            [(4, "torch.nn.Linear")],
        ),
        ("from torch.nn import Linear\nLinear(2, 3)", [(1, "torch.nn.Linear")]),
        ("import torch\nlin = torch.nn.Linear\nlin(2, 3)", [(2, "torch.nn.Linear")]),
        ("from torch import nn\ngetattr(nn, 'Embedding')(3, 4)", [(2, "torch.nn.Embedding")]),
        (
            "import torch\ntorch.nn.utils.clip_grad_norm_(p, 1.0)",
            [(2, "torch.nn.utils.clip_grad_norm_")],
        ),
        ("import torch\nopt = torch.optim.AdamW(p)", [(2, "torch.optim.AdamW")]),
        ("import torch as t\nclass A(t.optim.Optimizer):\n    pass", []),
        ("import torch\ntorch.nn.init.trunc_normal_(w)\ntorch.nn.Parameter(w)", []),
        ("from torch import nn\nnn.ModuleList([])\nnn.Sequential()\nnn.ParameterDict()", []),
        ("import torch\ntorch.softmax(x, -1)\nx.softmax(-1)", []),  # not in torch.nn
        ("nn = object()\nnn.Linear", []),  # not bound to torch
        ("from . import nn\nnn.Linear", []),  # the submission's own module
    ],
)
def test_every_followed_route_to_a_forbidden_definition_is_found(source, found):
    assert names(source) == found


def test_the_bundled_implementation_breaks_no_rule():
    assert scan_submission(REPO_ROOT) == ([], [])


def test_the_fused_adapters_show_each_fused_op_they_use():
    source = (REPO_ROOT / "tests" / "fused_adapters.py").read_bytes()
    used = {f.name for f in scan_source(source, "tests/fused_adapters.py")}
    assert {
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.functional.silu",
        "torch.nn.functional.rms_norm",
        "torch.nn.functional.cross_entropy",
        "torch.nn.Linear",
        "torch.nn.Embedding",
        "torch.optim.AdamW",
    } <= used
    assert not [name for name in used if not DEFAULT.forbids(name)]


def test_a_file_that_cannot_be_parsed_is_reported_not_skipped(tmp_path):
    (tmp_path / "cs336_basics").mkdir()
    (tmp_path / "cs336_basics" / "broken.py").write_text("def f(:\n")
    (tmp_path / "cs336_basics" / "deep.py").write_text("x = " + "(" * 10_000 + ")" * 10_000)
    (tmp_path / "cs336_basics" / "long.py").write_text("import torch\nx = torch" + ".a" * 100_000)
    findings, unscanned = scan_submission(tmp_path)
    assert findings == []
    assert {(u.path, u.reason) for u in unscanned} == {
        ("cs336_basics/broken.py", "SyntaxError"),
        ("cs336_basics/deep.py", "SyntaxError"),  # too many nested parentheses
        ("cs336_basics/long.py", "RecursionError"),  # the parser's own limit
    }
