"""Tests of the bundled implementation itself (its error messages, parameter counts, the
training command): collected only when the adapters under test are the bundled ones.
"""
