"""The one error that stops grading: the grader itself cannot run (exit status 2)."""


class GraderError(RuntimeError):
    """Bad arguments, a broken rubric, trusted files that fail verification, or trusted tests
    that cannot be collected. A submission's misbehaviour is never one of these."""
