"""The assignment's rules: build the components from scratch, not from `torch.nn`.

- `policy`: which of PyTorch's definitions a submission may use (`Policy`, `DEFAULT`).
- `static_scan`: the forbidden uses a submission's source shows, found without running it.
"""
