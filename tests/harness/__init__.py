"""Tests of the harness: the meta-test, diagnosis, the rules, the oracle, the docs."""
