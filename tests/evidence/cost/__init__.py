"""Implementations that are correct but whose cost is the question: slow or non-streaming ones,
each declaring the efficiency tests that fail it (`CAUGHT_BY`, family names) and the words its
message must hold (`NAMED`), and efficient ones in styles the efficiency tests must not dock
(parallel pre-tokenization, a chunked stream), which declare no family. The meta-test runs
them all (`tests/meta/test_meta_cost.py`)."""
