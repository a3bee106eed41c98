"""The judge: the trusted process that runs the tests, calls the worker and records the
verdicts."""
