"""solar-lsp: Speed-of-Light (SOL) bounds for PyTorch and JAX code."""

__version__ = "0.1.0"
