pytest_plugins = ["cs336_harness.pytest_plugin"]
