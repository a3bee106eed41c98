"""An AdamW in which one known mistake can be switched on, for the wrong modules beside it,
and which can take each reading the test accepts, for the meta-test."""

import math

import torch


def adamw_with(
    mistake: str | None = None,
    *,
    decay_order: str = "after_update",
    eps_added_to: str = "sqrt_v",
    constructor_keys: tuple[str, ...] = (),
) -> type[torch.optim.Optimizer]:
    """`mistake`: "no_bias_correction", "coupled_decay" (L2 added to the gradient, i.e. Adam
    with weight decay, not AdamW), "decay_without_lr" (θ ← θ − λθ), "group_defaults"
    (every group stepped with the constructor's hyperparameters), "betas_swapped",
    "step_count_ahead" (t = 2 at the first step), "first_moment_sum" (m ← β₁m + g),
    "second_moment_plain" (v ← β₂v + (1 − β₂)g), "bias_correction_inverted" (the step size
    lr·(1 − β₁ᵗ)/√(1 − β₂ᵗ)), "first_moment_only_corrected" (lr·m̂/(√v + ε)),
    "shared_step" (one step count for the optimizer), "decay_without_grad" (a parameter
    without a gradient decayed all the same), "update_added" (θ ← θ + update, ascent) or
    "moments_outside_state" (each parameter's step count and moments kept in a dict
    attribute of the optimizer's own, which `state_dict()` does not see); None: no mistake.

    `decay_order` ("after_update" or "first") and `eps_added_to` ("sqrt_v" or "sqrt_v_hat"):
    the reading, as `oracle.adamw_trajectory` names them; the defaults are the handout's.
    `constructor_keys`: the hyperparameters read from the constructor's arguments instead of
    each group's (kept under keys of the optimizer's own)."""

    class WrongAdamW(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
            self.fixed = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
            super().__init__(params, dict(self.fixed))
            self.steps = 0  # the optimizer's own count of step() calls ("shared_step")
            self.moments: dict[torch.Tensor, dict] = {}  # "moments_outside_state"

        def _decay(self, p, lr, decay):
            if mistake == "decay_without_lr":
                p.sub_(decay * p)
            elif mistake != "coupled_decay":
                p.sub_(lr * decay * p)

        @torch.no_grad()
        def step(self, closure=None):
            self.steps += 1
            for group in self.param_groups:
                h = self.fixed if mistake == "group_defaults" else group
                h = {k: (self.fixed if k in constructor_keys else h)[k] for k in self.fixed}
                lr, (b1, b2), eps, decay = h["lr"], h["betas"], h["eps"], h["weight_decay"]
                if mistake == "betas_swapped":
                    b1, b2 = b2, b1
                for p in group["params"]:
                    if p.grad is None:
                        if mistake == "decay_without_grad":
                            self._decay(p, lr, decay)
                        continue
                    g = p.grad + decay * p if mistake == "coupled_decay" else p.grad
                    if mistake == "moments_outside_state":
                        state = self.moments.setdefault(p, {})
                    else:
                        state = self.state[p]
                    if not state:
                        state["t"], state["m"], state["v"] = (
                            1 if mistake == "step_count_ahead" else 0,
                            torch.zeros_like(p),
                            torch.zeros_like(p),
                        )
                    state["t"] += 1
                    t, m, v = state["t"], state["m"], state["v"]
                    if mistake == "shared_step":
                        t = self.steps
                    if decay_order == "first":
                        self._decay(p, lr, decay)
                    m.mul_(b1).add_(g, alpha=1.0 if mistake == "first_moment_sum" else 1 - b1)
                    if mistake == "second_moment_plain":
                        v.mul_(b2).add_(g, alpha=1 - b2)
                    else:
                        v.mul_(b2).addcmul_(g, g, value=1 - b2)
                    if mistake == "no_bias_correction":
                        p.sub_(lr * m / (v.sqrt() + eps))
                    elif mistake == "bias_correction_inverted":
                        p.sub_(lr * (1 - b1**t) / math.sqrt(1 - b2**t) * m / (v.sqrt() + eps))
                    elif mistake == "first_moment_only_corrected":
                        p.sub_(lr * (m / (1 - b1**t)) / (v.sqrt() + eps))
                    elif mistake == "update_added":
                        alpha = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
                        p.add_(alpha * m / (v.sqrt() + eps))
                    elif eps_added_to == "sqrt_v":
                        alpha = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
                        p.sub_(alpha * m / (v.sqrt() + eps))
                    else:
                        m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
                        p.sub_(lr * m_hat / (v_hat.sqrt() + eps))
                    if decay_order == "after_update":
                        self._decay(p, lr, decay)

    return WrongAdamW
