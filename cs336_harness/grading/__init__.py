"""The grader: `cs336-grade` runs the trusted component tests on untrusted submissions.

Where to look:

- `cli`: the command line; `grader`: the pool of judge lanes and grading one submission.
- `judge`, `record`: the trusted process that runs the tests, and its verdict record.
- `protocol`, `remote`, `worker`: how a `run_*` call reaches the submission's process and
  its value comes back as plain data.
- `sandbox`, `limits`: the bubblewrap sandbox the worker runs in, and its resource limits.
- `trusted`, `submissions`: the bundle of trusted files (stored or fresh fixtures), and
  what of a submission is graded.
- `results`, `scoring`: verdicts, the rubric and points (contract apart from hardening).
- `reports`, `shards`: Gradescope JSON, JUnit, CSV, tables; sharded grading and `merge`.
- `handout`, `stubs`: the student copy of the repository.
- `autograder`, `run_autograder`: the Gradescope autograder package, and what it runs per
  submission.
"""
