"""``python -m solar_lsp.cli``: the ``solar`` command."""

from solar_lsp.cli.main import run

run()
