"""tether over the Agent Client Protocol (`tether acp`): editors such as Zed, JetBrains IDEs and
Neovim clients drive a tether agent over stdio, on the official `agent-client-protocol` SDK.

Modules: `server` (the ACP agent: sessions, prompts, cancellation, modes, permission requests),
`stdio` (`serve` runs it on stdin/stdout; lines that are not messages get a JSON-RPC error) and
`convert` (the translations between tether's values and the
protocol's). A host like the CLI and the TUI: it builds agents through
`tether.Agent.from_settings` and reads them only through the agent's public face.
"""
