"""Language servers as the agent's eyes: after `write` / `edit` the diagnostics a server
publishes for the file join the tool's result, and the `lsp` tool asks a server for
definitions, references, hovers and symbols.

The protocol is pygls' `LanguageClient` with lsprotocol's types; this package is the harness
side. An agent holds one `LspManager` (`tether.lsp.manager`) in its tool context
(`ToolContext.lsp`):

    manager = lsp_manager(settings.lsp, root=root, env=env, sandbox=sandbox, on_warning=...)
    before = await manager.before_change(path)       # starts the server on first touch
    ...                                               # the file changes
    block = await manager.after_change(path, before)  # `<diagnostics ...>` or None
    await manager.aclose()

Modules: `config` (settings → `ServerSpec`, the built-in servers, commands found in tether's
environment or on PATH, project roots), `client` (one server process over pygls), `manager`,
`report` (pure: findings, what is new, the block and its caps), `tool` (the `lsp` tool).
Importing this package does not import pygls: `client` and `tool` do, when a server starts or
the tool is offered.
"""

from tether.lsp.config import ServerSpec, resolve_servers
from tether.lsp.manager import LspManager, lsp_manager

__all__ = ["LspManager", "ServerSpec", "lsp_manager", "resolve_servers"]
