"""Diagnosis: a failing test's message opens with the known mistake its output matches, or
else with the shape of its error (docs/checking.md, "Diagnosis: the likely cause of a wrong
output")."""
