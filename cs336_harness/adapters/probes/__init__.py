"""Checks of adapters that take or return objects: each builds the objects, drives the
adapters and returns plain data (`registry`, then one module per subject)."""
