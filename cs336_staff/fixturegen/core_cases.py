"""The core families' cases, all cut from one reference model (LLaMA-style), each
family's cases drawn from streams named for them (`FixtureSet.rng`)."""

from __future__ import annotations

import numpy as np

from cs336_staff.fixturegen.attention_cases import add_attention, add_mha, add_rope
from cs336_staff.fixturegen.component_cases import (
    add_embedding,
    add_linear,
    add_rmsnorm,
    add_silu,
    add_softmax,
    add_swiglu,
)
from cs336_staff.fixturegen.model_cases import add_block, add_lm, add_modules
from cs336_staff.fixturegen.reference_model import (
    MODEL_FILE,
    REFERENCE_CONFIG,
    draw_reference_model,
)
from cs336_staff.fixturegen.writer import FixtureSet


def add_core(fs: FixtureSet) -> dict[str, np.ndarray]:
    """Add the reference model and every core family; return the reference weights."""
    model = draw_reference_model(fs)
    fs.add_shared("model_config.json", REFERENCE_CONFIG)
    fs.add_shared(MODEL_FILE, model)
    add_linear(fs, model)
    add_embedding(fs, model)
    add_rmsnorm(fs, model)
    add_silu(fs)
    add_softmax(fs)
    add_swiglu(fs, model)
    add_rope(fs)
    add_attention(fs)
    add_mha(fs, model)
    add_block(fs, model)
    add_lm(fs, model)
    add_modules(fs)
    return model
