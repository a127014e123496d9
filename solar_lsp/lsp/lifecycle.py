"""The session's life cycle: initialize (root, initializationOptions), initialized (the first
pull of section ``solar``), configuration changes (pull again, re-analyze) and shutdown."""

from __future__ import annotations

import asyncio

from lsprotocol import types as T
from pygls import uris

from solar_lsp.lsp.analysis import schedule
from solar_lsp.lsp.app import SolarServer, server
from solar_lsp.lsp.publish import notify_status


@server.feature(T.INITIALIZE)
def on_initialize(ls: SolarServer, params: T.InitializeParams) -> None:
    """Take the workspace root and the client's initializationOptions (flat or under ``solar``)."""
    ls.root = params.root_path or (params.root_uri and uris.to_fs_path(params.root_uri)) or None
    ls.config_ready = asyncio.Event()
    opts = params.initialization_options
    if isinstance(opts, dict):
        ls.init_settings = dict(opts.get("solar", opts))
        ls.client_settings = dict(ls.init_settings)


@server.feature(T.INITIALIZED)
async def on_initialized(ls: SolarServer, params: T.InitializedParams) -> None:
    """Pull the client's settings before the first analysis, then start the workers."""
    try:
        await _pull_configuration()
    finally:
        ls.config_ready.set()
    ls.ensure_runtime()
    notify_status()


async def _pull_configuration() -> None:
    caps = server.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return
    try:
        res = await asyncio.wait_for(server.workspace_configuration_async(
            T.ConfigurationParams(items=[T.ConfigurationItem(section="solar")])), 5)
    except Exception:
        return
    if res and isinstance(res[0], dict):
        # the whole section: a setting the user removed since the last pull is gone here too
        server.client_settings = {**server.init_settings, **res[0]}


@server.feature(T.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def on_config(ls: SolarServer, params: T.DidChangeConfigurationParams) -> None:
    """New client settings (sent, or pulled when the notification carries none): re-analyze."""
    ls.overrides.clear()  # the user's settings now say what they want; earlier commands yield
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get("solar"), dict):
        ls.client_settings = {**ls.init_settings, **settings["solar"]}
    else:
        await _pull_configuration()
    ls.ensure_runtime()
    for uri in list(ls.docs):
        schedule(uri)


@server.feature(T.SHUTDOWN)
async def on_shutdown(ls: SolarServer, params: None) -> None:
    """Stop the workers."""
    if ls.pool is not None:
        await ls.pool.close()
