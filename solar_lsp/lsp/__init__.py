"""The language server's parts: settings, source closures, the results cache, the worker
pool that runs user code out of process, and the pure presentation of results."""
