"""The ``solar`` command line, one module per command (main.py dispatches)."""
