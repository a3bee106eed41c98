"""The grader: `cs336-grade` runs the trusted component tests on untrusted submissions.

Each submission runs in test processes of its own (`attempt`), on private copies of the
trusted harness, tests and fixtures (`trusted`, `workspace`), under time, memory and output
limits (`limits`). A pytest plugin in the test process (`results_plugin`) records every
test as it starts and finishes, so a crash loses only the running test and the rest are
rerun (`grader`, `verdicts`). Verdicts (`status`) become points per family (`rubric`,
`scoring`) and reports (`reports`). `handout` writes the student copy of the repository.
"""
