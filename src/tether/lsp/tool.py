"""The `lsp` tool: what the project's language server knows of a file — definitions,
references, hover, the file's symbols, the workspace's symbols, and the file's diagnostics.
Read-only (`safe`); every path is guarded like `read`'s.

Owns: `lsp_tool` (the tool's definition) and `LSP_TOOL` (its name). Its answers are
`tether.lsp.answers`' (imported at the first call).
Does not own: the servers (`tether.lsp.manager`, reached through `ToolContext.lsp`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from tether.errors import ToolError
from tether.lsp.manager import LspManager
from tether.tools.base import tool
from tether.tools.context import ToolContext

LSP_TOOL = "lsp"

Operation = Literal[
    "definition", "references", "hover", "document_symbols", "workspace_symbols", "diagnostics"
]


@tool(name=LSP_TOOL, safe=True)
async def lsp_tool(
    operation: Operation,
    path: str | None = None,
    line: Annotated[int | None, Field(ge=1)] = None,
    column: Annotated[int | None, Field(ge=1)] = None,
    query: str | None = None,
    *,
    ctx: ToolContext,
) -> str:
    """Ask the project's language server (read-only). `definition`, `references` and `hover`
    need `path`, `line` and `column` (of a character of the symbol's name); `document_symbols`
    and `diagnostics` need `path`; `workspace_symbols` needs `query` (and `path` of a file of
    the language when no server runs yet). Diagnostics also come after every write/edit.

    Args:
        operation: what to ask.
        path: a file in the working folder.
        line: 1-based line number (as `read` shows it).
        column: 1-based column, in characters.
        query: the name (or part of it) to look for, for workspace_symbols.
    """
    if not isinstance(ctx.lsp, LspManager):
        raise ToolError(
            "no language server here: `lsp.enabled` is off or none is installed (see docs/lsp.md)"
        )
    from tether.lsp.answers import ask

    return await ask(ctx.lsp, operation, path, line, column, query, ctx=ctx)


__all__ = ["LSP_TOOL", "lsp_tool"]
