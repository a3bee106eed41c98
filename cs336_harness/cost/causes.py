"""The known causes of a cost, as the catalog of mistakes names wrong outputs: what the code
likely does and the fix, named by an efficiency test's failure and ranked by the class
report. Each is proved by a module of `tests/evidence/cost/` that names it (`NAMED`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CostCause:
    id: str
    family: str
    # What the code likely does, and what to do instead: "likely <what>: <fix>".
    what: str
    fix: str

    def line(self, measured: str) -> str:
        """A failure's message: what was measured, then the likely cause and its fix."""
        return f"{measured}; likely {self.what}: {self.fix}"


CAUSES = {
    cause.id: cause
    for cause in (
        CostCause(
            "bpe_recounts_pairs",
            "train_bpe",
            "each merge recounts every pair of every word",
            "update only the counts of the pairs next to each merge, in the words that hold it",
        ),
        CostCause(
            "bpe_slow_before_merging",
            "train_bpe",
            "a slow pre-tokenization (a pattern compiled, or the text copied, for every "
            "pre-token or document)",
            "split at the special tokens once, match the pattern with finditer over each "
            "document and count the pre-tokens in a Counter",
        ),
        CostCause(
            "stream_read_whole",
            "tokenizer",
            "it reads the whole stream before it gives an id",
            "encode each line (or chunk) as it comes and yield its ids as they come",
        ),
        CostCause(
            "encode_rank_order",
            "tokenizer",
            "encode applies every merge in rank order over each pre-token",
            "find the lowest-ranked pair among the word's adjacent pairs (a dict from pair to "
            "rank), merge it, and repeat until no pair has a rank",
        ),
        CostCause(
            "encode_costly",
            "tokenizer",
            "encode repeats work for every pre-token (the vocabulary inverted, a pattern "
            "compiled or the merges ranked again on each call)",
            "build the lookups once in the constructor and remember each pre-token's ids",
        ),
        CostCause(
            "model_loops_over_positions",
            "",
            "a Python loop over the positions (a token at a time)",
            "compute every position at once: one matrix product for all the queries, the "
            "causal mask applied to the whole score matrix",
        ),
        CostCause(
            "model_costly",
            "",
            "work redone on every call (a causal mask or a RoPE table built anew, weights "
            "copied or transposed each time) or a Python loop over batch rows",
            "build masks and tables once (a buffer) and use whole-tensor operations over the batch",
        ),
        CostCause(
            "stream_keeps_ids",
            "tokenizer",
            "it keeps every id (or line) it has seen",
            "yield ids as they come and keep no list of them",
        ),
    )
}
