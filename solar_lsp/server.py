"""``python -m solar_lsp.server``: the language server on stdio (kept for editor configs).

The server lives in :mod:`solar_lsp.lsp.server`; this module only starts it.
"""

from solar_lsp.lsp.server import main

if __name__ == "__main__":
    main()
