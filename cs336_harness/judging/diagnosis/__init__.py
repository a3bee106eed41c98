"""Diagnosis: a failing test's message opens with the known mistake its output matches, or
else with the shape of its error.

- `catalog`: the known mistakes and each one's output on a stored case (needs the oracle, so
  it is withheld from the grader's bundle and the handout).
- `diagnose`: fingerprints of those outputs, matching with a test's tolerance, the opening
  lines, and the table the grader writes for its judge.
- `dtype_cause`: the likely cause of an output returned in float32 for a half-precision
  input, read from the dtype failure's line (no value is compared there).
- `error_shape`: where no known mistake matches, or none are at hand, the shape of the error
  (a constant factor, permuted axes, only some rows wrong, a misapplied attention mask, ...)
  from the output and the expected (and attention's inputs) alone.
- `numpy_cases`: stored cases as NumPy, read without torch.
- `plugin`: the pytest hook that puts the diagnosis in a failing test's message.
"""
