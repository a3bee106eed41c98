"""What runs beside a submission, in its process: its adapters module loaded, called and
probed."""
