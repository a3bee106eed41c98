"""What course staff keep and students never get: the float64 oracle, the fixture generator,
the catalog of known mistakes, the tolerance margins and the seed sweep.

The whole package is withheld from the grader's bundle and the student handout (a submission
could import a reference implementation otherwise); nothing under `cs336_harness/` imports it.
"""
