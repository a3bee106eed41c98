"""What a run grades on: the trusted bundle, inputs drawn for a seed or a student, the known
mistakes' table."""
