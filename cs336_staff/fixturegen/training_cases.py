"""Cases for the training half: loss, clipping, AdamW, schedule, batches, checkpoints, decoding.

As for the model, each case names the mistake it is there to catch, every number comes from
the seed, and where a case's power depends on the draw (a decoding distribution that a
wrong nucleus rule must visibly change, a greedy path with no near-tie), the draw is
repeated from the seed until it has that power. Cross-entropy's backward case
(`backward_case`) follows its forward cases, and `add_training` adds every family.
"""

from __future__ import annotations

import numpy as np

from cs336_harness.judging.case_layout import ADAMW_READINGS
from cs336_staff import oracle
from cs336_staff.fixturegen.backward_case import add_backward_case
from cs336_staff.fixturegen.draws import normal
from cs336_staff.fixturegen.reference_model import MODEL_FILE, REFERENCE_CONFIG
from cs336_staff.fixturegen.upstream_calls import upstream_passes
from cs336_staff.fixturegen.writer import FixtureSet

# Draws tried before the generator gives up on a seed (none has come close).
MAX_DRAWS = 200
# A nucleus this small holds the most likely token alone whenever that token has more mass,
# which it always has for vocabularies under a million: greedy decoding, in the contract.
GREEDY_TOP_P = 1e-6


def add_cross_entropy(fs: FixtureSet) -> None:
    def add(case_id: str, description: str, logits: np.ndarray, targets: np.ndarray) -> None:
        fs.add(
            "cross_entropy",
            case_id,
            description,
            {},
            {"inputs": logits, "targets": targets},
            np.asarray(oracle.cross_entropy(logits, targets)),
            hardening=(
                upstream_passes("(batch, vocab) logits", "more axes") if logits.ndim > 2 else None
            ),
        )

    rng = fs.rng("cross_entropy", "batch")
    logits = normal(rng, 8, 31, std=2.0)
    add("batch", "8 rows of 31 logits: the mean over the batch, not the sum",
        logits, rng.integers(0, 31, 8))  # fmt: skip
    rng = fs.rng("cross_entropy", "large_logits")
    offsets = rng.choice([-3000.0, 1500.0, 4000.0], size=(6, 1))
    logits = (offsets + normal(rng, 6, 17, std=20.0)).astype(np.float32)
    add("large_logits", "logits in the thousands: exp overflows without the max shift",
        logits, rng.integers(0, 17, 6))  # fmt: skip
    rng = fs.rng("cross_entropy", "leading_dims")
    add("leading_dims", "logits (2, 5, 13): every leading position counts in the mean",
        normal(rng, 2, 5, 13), rng.integers(0, 13, (2, 5)))  # fmt: skip
    rng = fs.rng("cross_entropy", "vocab_10000")
    add("vocab_10000", "4 rows over the reference vocabulary of 10000",
        normal(rng, 4, 10000, std=3.0), rng.integers(0, 10000, 4))  # fmt: skip
    rng = fs.rng("cross_entropy", "target_far_below")
    logits, targets = normal(rng, 6, 19, std=2.0), rng.integers(0, 19, 6)
    # Whatever the draw, every target's logit trails its row's largest by 300 to 500: far
    # past float32's exp range (e^-104 is its smallest positive value).
    gaps = rng.uniform(300.0, 500.0, 6).astype(np.float32)
    logits[np.arange(6), targets] = logits.max(axis=-1) - gaps
    add("target_far_below", "each target's logit 300 to 500 below its row's largest: "
        "softmax(logits)[target] underflows to 0, so -log of it is inf; log-sum-exp minus "
        "the target's logit is not", logits, targets)  # fmt: skip


def _gradients(rng: np.random.Generator, shapes: list[tuple[int, ...]], scales: list[float]):
    return [normal(rng, *s, std=c) for s, c in zip(shapes, scales, strict=True)]


def add_gradient_clipping(fs: FixtureSet) -> None:
    shapes = [(4, 5), (7,), (2, 3, 2), (3,)]
    without_grad = [3]  # a parameter that took no part in the loss

    def add(
        case_id: str,
        description: str,
        grads: list[np.ndarray],
        max_norm: float,
        trivial: str | None = None,
    ) -> None:
        rng = fs.rng("gradient_clipping", case_id, "values")
        values = [normal(rng, *s) for s in shapes]
        clipped = oracle.clip_gradients(
            [None if i in without_grad else g for i, g in enumerate(grads)], max_norm
        )
        fs.add(
            "gradient_clipping",
            case_id,
            description,
            {"max_l2_norm": max_norm, "count": len(shapes), "without_grad": without_grad},
            {f"value.{i}": v for i, v in enumerate(values)}
            | {f"grad.{i}": g for i, g in enumerate(grads) if i not in without_grad},
            np.concatenate([g.ravel() for g in clipped if g is not None]),
            trivial=trivial,
        )

    rng = fs.rng("gradient_clipping", "over_limit")
    grads = _gradients(rng, shapes, [3.0, 0.05, 1.0, 1.0])
    add("over_limit", "norms 0.1 to 13 across parameters, clipped together to 1: one global "
        "norm, not one per parameter", grads, 1.0)  # fmt: skip
    rng = fs.rng("gradient_clipping", "under_limit")
    grads = _gradients(rng, shapes, [0.5, 0.5, 0.5, 0.5])
    norm = float(np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads[:3])))
    add("under_limit", "a norm already under the limit: gradients unchanged", grads,
        float(np.float32(norm * rng.uniform(1.2, 2.0))),
        trivial="they come back unchanged: a clipping that does nothing gives them")  # fmt: skip
    rng = fs.rng("gradient_clipping", "epsilon")
    grads = _gradients(rng, shapes, [1.0, 1.0, 1.0, 1.0])
    norm = float(np.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads[:3])))
    grads = [(g * np.float32(2e-6 / norm)).astype(np.float32) for g in grads]
    add("epsilon", "a norm of 2e-6 clipped to 1e-6: the 1e-6 in max / (norm + 1e-6) matters",
        grads, 1e-6)  # fmt: skip


def _adamw_case(
    fs: FixtureSet,
    case_id: str,
    description: str,
    shapes: list[tuple[int, ...]],
    groups: list[dict],
    steps: int,
    missing: dict[int, set[int]] | None = None,
    hardening: str | None = None,
) -> None:
    rng = fs.rng("adamw", case_id)
    initial = [normal(rng, *s) for s in shapes]
    # Gradients change scale from step to step, so the moments are not just the last gradient.
    scales = rng.uniform(0.1, 3.0, steps)
    grads = [
        [None if t in (missing or {}).get(i, set()) else normal(rng, *s, std=scales[t])
         for i, s in enumerate(shapes)]
        for t in range(steps)
    ]  # fmt: skip
    flat = {
        name: np.stack(
            [np.concatenate([p.ravel() for p in step]) for step in
             oracle.adamw_trajectory(initial, grads, groups, decay_order, eps_added_to)]
        )
        for name, (decay_order, eps_added_to, _) in ADAMW_READINGS.items()
    }  # fmt: skip
    inputs = {f"initial.{i}": v for i, v in enumerate(initial)}
    inputs |= {
        f"grad.{t}.{i}": g for t, step in enumerate(grads) for i, g in enumerate(step)
        if g is not None
    }  # fmt: skip
    # Stored as float32 like `expected` (see FixtureSet.add), which the handout's reading is.
    inputs |= {name: v.astype(np.float32) for name, v in flat.items() if name != "expected"}
    fs.add(
        "adamw",
        case_id,
        description,
        {"count": len(shapes), "steps": steps, "groups": groups},
        inputs,
        flat["expected"],
        hardening=hardening,
    )


def add_adamw(fs: FixtureSet) -> None:
    rng = fs.rng("adamw", "hyperparameters")
    lr = float(np.float32(rng.uniform(5e-3, 2e-2)))
    decay = float(np.float32(rng.uniform(0.05, 0.3)))
    base = {"lr": lr, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": decay}
    _adamw_case(
        fs, "one_group",
        "three parameters, 30 steps: moments, bias correction and decoupled weight decay",
        [(5, 4), (6,), (2, 3)], [base | {"params": [0, 1, 2]}], 30,
    )  # fmt: skip
    other = {"lr": 3 * lr, "betas": [0.8, 0.99], "eps": 1e-6, "weight_decay": 2 * decay}
    _adamw_case(
        fs, "two_groups",
        "two parameter groups with their own lr, betas, eps and weight decay",
        [(4, 3), (5,), (3, 3)],
        [base | {"params": [0, 2]}, other | {"params": [1]}], 20,
        hardening=upstream_passes("model.parameters() and one set of hyperparameters",
                                  "parameter groups of their own"),
    )  # fmt: skip
    _adamw_case(
        fs, "missing_gradients",
        "a parameter without a gradient on some steps is left alone and keeps its own step "
        "count (as torch.optim does)",
        [(3, 4), (4,)], [base | {"params": [0, 1]}], 12, missing={1: {0, 1, 5, 6, 7}},
        hardening=upstream_passes("a gradient for every parameter at every step",
                                  "a step without one"),
    )  # fmt: skip


def add_learning_rate_schedule(fs: FixtureSet) -> None:
    def add(case_id: str, description: str, warmup: int, cycle: int) -> None:
        rng = fs.rng("learning_rate_schedule", case_id)
        max_lr = float(np.float32(rng.uniform(5e-4, 5e-3)))
        min_lr = float(np.float32(max_lr * rng.uniform(0.02, 0.2)))
        mid = (warmup + cycle) // 2
        its = sorted(
            {0, 1, warmup // 2, max(warmup - 1, 0), warmup, warmup + 1, mid, cycle - 1, cycle,
             cycle + 1, cycle + 37, 2 * cycle}
        )  # fmt: skip
        fs.add(
            "learning_rate_schedule",
            case_id,
            description,
            {
                "max_learning_rate": max_lr,
                "min_learning_rate": min_lr,
                "warmup_iters": warmup,
                "cosine_cycle_iters": cycle,
            },
            {"its": np.asarray(its, dtype=np.int64)},
            np.asarray([oracle.cosine_schedule(i, max_lr, min_lr, warmup, cycle) for i in its]),
        )

    rng = fs.rng("learning_rate_schedule", "sizes")
    warmup = int(rng.integers(5, 20))
    add("warmup_and_cosine", "it = 0, during and at the end of warm-up, along the cosine, at "
        "and past the end of the cycle", warmup, warmup + int(rng.integers(20, 80)))  # fmt: skip
    add("no_warmup", "warmup_iters = 0: the cosine from the first step",
        0, int(rng.integers(10, 40)))  # fmt: skip


def add_data_loading(fs: FixtureSet) -> None:
    rng = fs.rng("data_loading", "sizes")
    for case_id, memmap in [("array", False), ("memmap", True)]:
        length = int(rng.integers(60, 120))
        context = int(rng.integers(4, 10))
        first = int(rng.integers(1000, 30000))
        fs.add(
            "data_loading",
            case_id,
            f"{length} ids as a {'uint16 np.memmap' if memmap else 'NumPy array'}: every "
            "valid start drawn, none past the end, labels shifted by one",
            {"batch_size": 32, "context_length": context, "calls": 200, "memmap": memmap},
            # Ids that are not their own positions, so windows of positions are caught.
            {"dataset": np.arange(first, first + length, dtype=np.int64)},
            None,
            hardening=upstream_passes("an int64 NumPy array", "a uint16 np.memmap")
            if memmap
            else None,
        )


def add_checkpointing(fs: FixtureSet) -> None:
    rng = fs.rng("checkpointing", "runs")
    for target in ("path", "file"):
        before = int(rng.integers(2, 6))
        fs.add(
            "checkpointing",
            f"resume_from_{target}",
            f"saved to a {'path' if target == 'path' else 'binary file object'} after "
            f"{before} steps and resumed: the same end state, bit for bit, as never stopping",
            {"seed": int(rng.integers(0, 2**31)), "steps_before": before,
             "steps_after": int(rng.integers(2, 6)), "target": target},
            {},
            None,
            hardening=upstream_passes("a path", "a file object") if target == "file" else None,
        )  # fmt: skip


def _nucleus_mistakes(logits: np.ndarray, temperature: float, top_p: float) -> list[np.ndarray]:
    """What the usual mistakes would sample from: the crossing token dropped, the nucleus cut
    before the temperature, no temperature, no nucleus."""
    z = logits.astype(np.float64) / temperature
    probs = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
    order = np.argsort(-probs)
    strict = order[np.cumsum(probs[order]) <= top_p]
    strict = strict if strict.size else order[:1]
    dropped = np.zeros_like(probs)
    dropped[strict] = probs[strict] / probs[strict].sum()
    cut_first = np.where(oracle.nucleus_distribution(logits, 1.0, top_p) > 0, probs, 0.0)
    return [
        dropped,
        cut_first / cut_first.sum(),
        oracle.nucleus_distribution(logits, 1.0, top_p),
        oracle.nucleus_distribution(logits, temperature, 1.0),
    ]


def _sharp_logits(fs: FixtureSet, case_id: str, temperature: float, top_p: float) -> np.ndarray:
    """Logits on which each usual mistake moves some token's probability by ≥ 0.06 (about
    four times the largest count deviation a correct sampler shows at 40000 samples) and no
    token sits within 1e-3 of the nucleus boundary (float32 cumulative sums stay on the
    oracle's side of it)."""
    for attempt in range(MAX_DRAWS):
        logits = normal(fs.rng("decoding", case_id, str(attempt)), 10, std=1.5)
        right = oracle.nucleus_distribution(logits, temperature, top_p)
        z = logits.astype(np.float64) / temperature
        probs = np.sort(np.exp(z - z.max()) / np.exp(z - z.max()).sum())[::-1]
        margin = np.abs(np.cumsum(probs) - top_p).min() if top_p < 1 else 1.0
        mistakes = _nucleus_mistakes(logits, temperature, top_p)
        # With no nucleus only the temperature can be got wrong.
        mistakes = mistakes if top_p < 1 else mistakes[2:3]
        power = min(np.abs(wrong - right).max() for wrong in mistakes)
        if margin >= 1e-3 and power >= 0.06:
            return logits
    raise RuntimeError(f"decoding/{case_id}: no sharp draw in {MAX_DRAWS}")


def _greedy_prompt(fs: FixtureSet, model: dict[str, np.ndarray], new: int):
    """A prompt whose greedy path has no near-tie: every step's best logit leads the next by
    ≥ 2e-3, hundreds of times the largest logit error of a correct float32 LM (2.6e-6,
    `cs336_harness/tolerances.py`), so float32 arg-max follows the oracle's path."""
    for attempt in range(MAX_DRAWS):
        prompt = fs.rng("decoding", "prompt", str(attempt)).integers(0, 10000, 4)
        tokens, gap = oracle.greedy_generate(prompt, model, REFERENCE_CONFIG, new)
        if gap >= 2e-3:
            return prompt, tokens
    raise RuntimeError(f"decoding: no greedy path without a near-tie in {MAX_DRAWS} prompts")


def add_decoding(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    samples = 40000
    for case_id, temperature, top_p, description in [
        ("nucleus", 0.7, 0.8, "temperature 0.7 then top-p 0.8: the token that crosses 0.8 is "
         "kept, the rest renormalised"),
        ("temperature_only", 1.6, 1.0, "temperature 1.6 and no nucleus: softmax(logits / 1.6)"),
    ]:  # fmt: skip
        logits = _sharp_logits(fs, case_id, temperature, top_p)
        fs.add(
            "decoding",
            case_id,
            description,
            {"temperature": temperature, "top_p": top_p, "samples": samples},
            {"logits": logits},
            oracle.nucleus_distribution(logits, temperature, top_p),
        )
    rng = fs.rng("decoding", "greedy")
    logits = normal(rng, 6, 50, std=2.0)
    for case_id, temperature, top_p, hardening in [
        ("greedy_by_top_p", 1.0, GREEDY_TOP_P, None),
        ("greedy_by_zero_temperature", 0.0, 1.0, "upstream leaves temperature 0 undefined; "
         "here it means arg-max"),
    ]:  # fmt: skip
        fs.add(
            "decoding",
            case_id,
            f"6 rows, temperature {temperature}, top-p {top_p}: the arg-max of each row",
            {"temperature": temperature, "top_p": top_p, "samples": 1},
            {"logits": logits},
            np.argmax(logits, axis=-1),
            hardening=hardening,
            trivial="the arg-max of each row: sampling that ignores temperature and top-p gives it",
        )
    new = 10
    prompt, greedy = _greedy_prompt(fs, model, new)
    eos = greedy[3]
    stop = greedy.index(eos) + 1
    reference = REFERENCE_CONFIG | {"weights_file": MODEL_FILE, "weights_prefix": ""}
    for case_id, end_of_text_id, expected, description in [
        ("generate_stops_at_end_of_text", eos, greedy[:stop],
         f"greedy decoding from the reference model stops after end-of-text, token {stop}"),
        ("generate_max_new_tokens", None, greedy,
         f"greedy decoding without end-of-text: exactly {new} new tokens"),
    ]:  # fmt: skip
        fs.add(
            "decoding",
            case_id,
            description,
            reference | {"max_new_tokens": new, "end_of_text_id": end_of_text_id,
                         "temperature": 1.0, "top_p": GREEDY_TOP_P},
            {"prompt": prompt},
            np.asarray(expected),
        )  # fmt: skip


def add_cross_entropy_backward(fs: FixtureSet) -> None:
    """Cross-entropy's backward case: the logits' gradient."""
    rng = fs.rng("cross_entropy", "backward")
    targets = rng.integers(0, 20, 12)
    add_backward_case(
        fs, "cross_entropy", "backward_batch",
        "(softmax - one_hot) / 12 over logits (12, 20), times a scalar projection",
        {},
        {"inputs": normal(rng, 12, 20, std=2.0)},
        lambda v: np.asarray(oracle.cross_entropy(v["inputs"], targets)),
        lambda v, d: {
            "inputs": oracle.cross_entropy_backward(v["inputs"], targets, float(d))["logits"]
        },
        others={"targets": targets},
    )  # fmt: skip


def add_training(fs: FixtureSet, model: dict[str, np.ndarray]) -> None:
    add_cross_entropy(fs)
    add_cross_entropy_backward(fs)
    add_gradient_clipping(fs)
    add_adamw(fs)
    add_learning_rate_schedule(fs)
    add_data_loading(fs)
    add_checkpointing(fs)
    add_decoding(fs, model)
