"""The `lsp` tool's answers: one call's request to the file's server and its text.

Owns: `ask` (the operation → the request, over lsprotocol types), the text of each answer
(locations as `path:line:column: the line`, symbols as an indented outline, hover as the
server gives it, diagnostics as the block `write` / `edit` show). Every path is guarded like
`read`'s. Imported only when the tool runs (lsprotocol's types take a while to import).
Does not own: the tool's definition (`tether.lsp.tool`), the servers (`tether.lsp.manager`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from lsprotocol import types as lsp

from tether.errors import ToolError
from tether.lsp.client import LspServer, ServerDown, char_column, utf16_column
from tether.lsp.manager import LspManager, read_text
from tether.lsp.report import render_block
from tether.plural import counted
from tether.tools.builtin.files import guard, rel
from tether.tools.context import ToolContext

MAX_LOCATIONS = 100
"""Locations listed at most (references, definitions, workspace symbols)."""
MAX_SYMBOLS = 400
REQUEST_TIMEOUT_S = 30.0
"""The least time one call waits for the server's answer (s; `lsp.timeout` when longer)."""
MAX_HOVER_CHARS = 6000



def _where(ctx: ToolContext, uri: str, pos: lsp.Position, cache: dict[str, list[str]]) -> str:
    path = Path(uri.removeprefix("file://")) if uri.startswith("file://") else None
    if path is None:
        return f"{uri}:{pos.line + 1}"
    from urllib.parse import unquote

    path = Path(unquote(str(path)))
    if str(path) not in cache:
        text = read_text(path)
        cache[str(path)] = [] if text is None else text.split("\n")
    lines = cache[str(path)]
    line = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    name = rel(ctx, path) if path.is_relative_to(ctx.root) else str(path)
    snippet = line.strip()
    if len(snippet) > 200:
        snippet = snippet[:199] + "…"
    return f"{name}:{pos.line + 1}:{char_column(line, pos.character)}: {snippet}"


def _locations(ctx: ToolContext, found: Any) -> str:
    items: list[Any] = []
    if found is None:
        items = []
    elif isinstance(found, list | tuple):
        items = list(cast(Sequence[Any], found))
    else:
        items = [found]
    cache: dict[str, list[str]] = {}
    lines: list[str] = []
    for item in items[:MAX_LOCATIONS]:
        if isinstance(item, lsp.LocationLink):
            lines.append(_where(ctx, item.target_uri, item.target_selection_range.start, cache))
        elif isinstance(item, lsp.Location):
            lines.append(_where(ctx, item.uri, item.range.start, cache))
    if not lines:
        return "no locations found"
    if len(items) > MAX_LOCATIONS:
        lines.append(f"… {len(items) - MAX_LOCATIONS} more not shown")
    return "\n".join(lines)


def _hover(found: lsp.Hover | None) -> str:
    if found is None:
        return "no hover information at that position"
    contents = found.contents
    parts: list[str] = []
    seq: Sequence[Any] = (
        cast(Sequence[Any], contents) if isinstance(contents, list | tuple) else [contents]
    )
    for c in seq:
        if isinstance(c, lsp.MarkupContent):
            parts.append(c.value)
        elif isinstance(c, lsp.MarkedStringWithLanguage):
            parts.append(f"```{c.language}\n{c.value}\n```")
        elif isinstance(c, str):
            parts.append(c)
    text = "\n\n".join(p for p in parts if p.strip()) or "no hover information at that position"
    return text if len(text) <= MAX_HOVER_CHARS else text[:MAX_HOVER_CHARS] + "\n…"


def _kind(kind: lsp.SymbolKind) -> str:
    return kind.name.lower()


def _outline(found: Any) -> str:
    lines: list[str] = []

    def walk(symbols: Sequence[lsp.DocumentSymbol], depth: int) -> None:
        for s in symbols:
            if len(lines) >= MAX_SYMBOLS:
                return
            detail = f" — {s.detail}" if s.detail else ""
            start = s.selection_range.start.line + 1
            lines.append(f"{'  ' * depth}{_kind(s.kind)} {s.name}{detail} (line {start})")
            walk(s.children or [], depth + 1)

    items = list(cast(Sequence[Any], found)) if isinstance(found, list | tuple) else []
    if items and isinstance(items[0], lsp.DocumentSymbol):
        walk(cast(list[lsp.DocumentSymbol], items), 0)
    else:
        for s in cast(list[lsp.SymbolInformation], items)[:MAX_SYMBOLS]:
            container = f" in {s.container_name}" if s.container_name else ""
            lines.append(f"{_kind(s.kind)} {s.name}{container} (line {s.location.range.start.line + 1})")
    if not lines:
        return "no symbols"
    if len(lines) >= MAX_SYMBOLS:
        lines.append("… more not shown")
    return "\n".join(lines)


def _workspace(ctx: ToolContext, found: Any) -> str:
    items = list(cast(Sequence[Any], found)) if isinstance(found, list | tuple) else []
    cache: dict[str, list[str]] = {}
    lines: list[str] = []
    for s in items[:MAX_LOCATIONS]:
        if isinstance(s, lsp.SymbolInformation):
            where = _where(ctx, s.location.uri, s.location.range.start, cache)
        elif isinstance(s, lsp.WorkspaceSymbol):
            loc = s.location
            if isinstance(loc, lsp.Location):
                where = _where(ctx, loc.uri, loc.range.start, cache)
            else:
                where = loc.uri
        else:
            continue
        lines.append(f"{_kind(s.kind)} {s.name} — {where}")
    if not lines:
        return "no symbols matched"
    if len(items) > MAX_LOCATIONS:
        lines.append(f"… {len(items) - MAX_LOCATIONS} more not shown")
    return "\n".join(lines)


async def _server(manager: LspManager, real: Path, name: str) -> LspServer:
    if manager.spec_for(real) is None:
        exts = sorted({e for s in manager.specs for e in s.extensions})
        raise ToolError(
            f"no language server serves {name} (servers here serve: {', '.join(exts) or 'none'})"
        )
    server = await manager.server_for(real)
    if server is None:
        raise ToolError(f"the language server for {name} is not running (see the warnings)")
    return server


async def ask(
    manager: LspManager,
    operation: str,
    path: str | None = None,
    line: int | None = None,
    column: int | None = None,
    query: str | None = None,
    *,
    ctx: ToolContext,
) -> str:
    """The answer of the `lsp` tool (`tether.lsp.tool.lsp_tool`) to one call."""
    server: LspServer | None = None
    real: Path | None = None
    name = ""
    if path is not None:
        real = guard(ctx, path)
        name = rel(ctx, real)
        if not real.is_file():
            raise ToolError(f"{name} is not a file")
        server = await _server(manager, real, name)
    elif operation != "workspace_symbols":
        raise ToolError(f"`{operation}` needs `path`")
    try:
        async with asyncio.timeout(max(manager.settings.timeout_s, REQUEST_TIMEOUT_S)):
            return await _answer(manager, server, real, name, operation, line, column, query, ctx)
    except TimeoutError:
        raise ToolError("the language server did not answer in time") from None
    except ServerDown as exc:
        raise ToolError(f"{exc}; it starts again at the next call") from None
    except ToolError:
        raise
    except Exception as exc:  # a JSON-RPC error from the server
        raise ToolError(f"the language server answered with an error: {exc}") from None


async def _answer(
    manager: LspManager,
    server: LspServer | None,
    real: Path | None,
    name: str,
    operation: str,
    line: int | None,
    column: int | None,
    query: str | None,
    ctx: ToolContext,
) -> str:
    if operation == "workspace_symbols":
        if not query:
            raise ToolError("`workspace_symbols` needs `query`")
        servers = [server] if server is not None else [
            s for s in manager.servers.values() if s.alive
        ]
        if not servers:
            raise ToolError(
                "no language server is running yet: give `path`, a file of the language "
                "to search"
            )
        out: list[str] = []
        for s in servers:
            found = await s.call(
                s.client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query=query))
            )
            out.append(_workspace(ctx, found))
        return "\n".join(out)
    assert server is not None and real is not None
    uri = await manager.sync_file(server, real)
    if uri is None:
        raise ToolError(f"{name} is not UTF-8 text (or too large) for a language server")
    doc = lsp.TextDocumentIdentifier(uri=uri)
    if operation == "diagnostics":
        found = await manager.findings(server, real)
        if found is None:
            return f"the server had not reported on {name} within {manager.settings.timeout_s:g} s"
        block = render_block(
            name,
            server.spec.name,
            found,
            None,
            least=manager.least,
            max_count=manager.settings.max_diagnostics,
            max_bytes=manager.settings.max_bytes,
        )
        return block or f"no {manager.settings.severity}-level diagnostics in {name}"
    if operation == "document_symbols":
        found = await server.call(
            server.client.text_document_document_symbol_async(
                lsp.DocumentSymbolParams(text_document=doc)
            )
        )
        return _outline(found)
    if line is None or column is None:
        raise ToolError(f"`{operation}` needs `line` and `column`")
    text = server.text_of(uri) or ""
    lines = text.split("\n")
    if line > len(lines):  # the empty line after a final newline is a position, not a line
        counted_lines = len(lines) - 1 if text.endswith("\n") or not text else len(lines)
        raise ToolError(f"{name} has {counted(counted_lines, 'line')}; line {line} is past the end")
    pos = lsp.Position(line=line - 1, character=utf16_column(lines[line - 1], column))
    if operation == "definition":
        found = await server.call(
            server.client.text_document_definition_async(
                lsp.DefinitionParams(text_document=doc, position=pos)
            )
        )
        return _locations(ctx, found)
    if operation == "references":
        found = await server.call(
            server.client.text_document_references_async(
                lsp.ReferenceParams(
                    text_document=doc,
                    position=pos,
                    context=lsp.ReferenceContext(include_declaration=True),
                )
            )
        )
        return _locations(ctx, found)
    found = await server.call(
        server.client.text_document_hover_async(
            lsp.HoverParams(text_document=doc, position=pos)
        )
    )
    return _hover(found)
