"""The core families' cases, all cut from one reference model (LLaMA-style), each
family's cases drawn from streams named for them (`FixtureSet.rng`)."""

from __future__ import annotations

import numpy as np

from cs336_staff.fixturegen.attention_cases import add_attention_layers
from cs336_staff.fixturegen.component_cases import add_components
from cs336_staff.fixturegen.model_cases import add_models
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
    add_components(fs, model)
    add_attention_layers(fs, model)
    add_models(fs, model)
    return model
