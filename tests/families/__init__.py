"""The graded test families, one module per family: what the handout ships and the grader
runs on every submission.
"""
