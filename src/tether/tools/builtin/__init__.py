"""The built-in tools: `files` (read, write, edit, ls), `search` (glob, grep), `bash` and
`question`; `toolset.builtin_tools()` is the default set in offering order.

Does not own: the `task` tool (`tether.agent.subagents`), tools from tool folders
(`tether.tools.scan`).
"""
