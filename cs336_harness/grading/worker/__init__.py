"""The worker: the process that runs a submission's code, and the protocol it answers on."""
