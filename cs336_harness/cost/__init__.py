"""What a submission's code costs: the CPU time of a call and all it started, the yardstick
it is measured against, and the budgets the efficiency tests hold it to (docs/contract.md,
"Efficiency")."""
