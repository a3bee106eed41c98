"""The check that an adapter handed its tensors back as it got them (`inputs_unchanged`):
what it names, and that a submission which replaces PyTorch's comparisons and tensor
methods (as one of the grader's hostile submissions does) cannot make it see a change that
did not happen."""

from __future__ import annotations

from unittest import mock

import torch

from cs336_harness.adapters import inputs_unchanged


def _arguments() -> tuple[tuple, dict]:
    weights = {"ln1.weight": torch.ones(4), "attn.q_proj.weight": torch.arange(16.0).reshape(4, 4)}
    nan = torch.tensor([float("nan"), 1.0], dtype=torch.bfloat16)
    return (torch.arange(3),), {"weights": weights, "in_features": nan, "mask": torch.ones(2) > 0}


def test_every_changed_tensor_is_named_where_it_was_passed():
    args, kwargs = _arguments()
    before = inputs_unchanged.fingerprints(args, kwargs)
    assert inputs_unchanged.changed(before) == []  # NaN bits compare equal
    kwargs["weights"]["attn.q_proj.weight"].t_()  # a square transpose: same shape, moved values
    args[0].add_(1)
    kwargs["mask"][0] = False
    assert inputs_unchanged.changed(before) == [
        "argument 1",
        "weights['attn.q_proj.weight']",
        "mask",
    ]


def test_an_adapter_that_takes_its_own_dictionary_apart_changed_nothing():
    # Upstream's tests hand each call a weights dict of its own, and adapters that pop their
    # entries as they load them pass there: only a tensor written into counts, not what the
    # dict holds afterwards.
    args, kwargs = _arguments()
    before = inputs_unchanged.fingerprints(args, kwargs)
    weights = kwargs["weights"]
    weights.pop("ln1.weight")
    weights["attn.q_proj.weight"] = weights["attn.q_proj.weight"].t().contiguous()
    assert inputs_unchanged.changed(before) == []
    kwargs["in_features"].mul_(2)
    assert inputs_unchanged.changed(before) == ["in_features"]


def test_replaced_comparisons_and_tensor_methods_change_nothing_it_sees():
    args, kwargs = _arguments()
    before = inputs_unchanged.fingerprints(args, kwargs)
    garbage = mock.Mock(side_effect=lambda *a, **k: torch.zeros(1))
    with (
        mock.patch.object(torch, "equal", lambda *a, **k: False),
        mock.patch.object(torch.Tensor, "__eq__", lambda *a, **k: torch.tensor(False)),
        mock.patch.object(torch.Tensor, "__ne__", lambda *a, **k: torch.tensor(True)),
        mock.patch.object(torch.Tensor, "detach", garbage),
        mock.patch.object(torch.Tensor, "clone", garbage),
        mock.patch.object(torch.Tensor, "numpy", garbage),
    ):
        assert inputs_unchanged.changed(before) == []
    assert not garbage.called
