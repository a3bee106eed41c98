"""Reports of a grading run: Gradescope JSON, JUnit XML, a CSV summary, terminal tables."""
