"""The grader, `cs336-grade`: its command line, the run, and a package per process and concern
(docs/architecture.md, "The map")."""
