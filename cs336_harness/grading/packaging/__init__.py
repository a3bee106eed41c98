"""What the grader writes for others: the Gradescope autograder, its per-run policies, the
student handout."""
