"""The one call both Transformer LM families make, so their tests read the same."""

from cs336_harness.judging.cases import Case


def run_lm(adapters, case: Case, in_indices):
    p = case.params
    return adapters.run_transformer_lm(
        vocab_size=p["vocab_size"],
        context_length=p["context_length"],
        d_model=p["d_model"],
        num_layers=p["num_layers"],
        num_heads=p["num_heads"],
        d_ff=p["d_ff"],
        rope_theta=p["rope_theta"],
        weights=case.weights,
        in_indices=in_indices,
    )
