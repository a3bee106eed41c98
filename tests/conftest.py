# pytester runs the suite inside the suite, for the meta-test (tests/test_meta.py).
pytest_plugins = ["cs336_harness.pytest_plugin", "pytester"]
