"""The assignment's rules: build the components from scratch, not from `torch.nn`
(docs/grading.md, "The assignment's rules")."""
