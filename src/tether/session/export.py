"""A stored session as a file to share: Markdown, a self-contained HTML page, or JSON lines.

Owns: `ExportFormat`, `EXPORT_FORMATS` and `export_session`, the one entry for every format.
Does not own: the formats (`tether.session.export_text`: Markdown and JSON lines;
`tether.session.export_html`: the page), reading the session (`tether.session.store`), the
commands (`tether sessions export`, the TUI's `/export`).

Pure: a `LoadedSession` (its image bytes restored) in, text out. Every text passes through
`redact`, which masks secrets as tool output does (`tether.tools.env.redact_secrets`).

    text = export_session(loaded, "md", redact=lambda s: redact_secrets(s, values))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, get_args

from tether.session.export_html import html_page
from tether.session.export_text import Redactor, jsonl, markdown

if TYPE_CHECKING:
    from tether.session.model import LoadedSession

__all__ = ["EXPORT_FORMATS", "ExportFormat", "Redactor", "export_session"]

ExportFormat = Literal["md", "html", "jsonl"]
EXPORT_FORMATS: tuple[ExportFormat, ...] = get_args(ExportFormat)
"""The formats, as `--format` names them."""


def export_session(loaded: LoadedSession, fmt: ExportFormat, *, redact: Redactor) -> str:
    """`loaded` as `fmt`: `md` (a Markdown transcript), `html` (one self-contained page) or
    `jsonl` (a `session` header line, then one `turn` line per turn with its images inline as
    base64), every text passed through `redact`.

    Raises:
        ValueError: an unknown format.
    """
    if fmt == "md":
        return markdown(loaded, redact)
    if fmt == "html":
        return html_page(loaded, redact)
    if fmt == "jsonl":
        return jsonl(loaded, redact)
    raise ValueError(f"unknown format {fmt!r}: give one of {', '.join(EXPORT_FORMATS)}")
