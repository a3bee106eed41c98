"""What judges a submission's outputs: the cases, the comparison with the oracle, the pytest
plugin, the diagnosis."""
