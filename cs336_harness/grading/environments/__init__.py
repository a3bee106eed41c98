"""The environment a submission's code runs in: the courses' by name, built with uv where
needed."""
