"""Docstring → tool description and parameter docs, and the JSON schema generator of tools.

Owns: `parse_docstring` (a Google-style docstring split into a description and per-parameter
text, parsed by griffe as pydantic-ai does) and `NoTitles` (pydantic's schema generator without
per-field `title` keys).
Does not own: building a `Tool` (`tether.tools.base`).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, cast

from griffe import (
    Docstring,
    DocstringElement,
    DocstringSection,
    DocstringSectionAdmonition,
    DocstringSectionParameters,
    DocstringSectionText,
)
from pydantic.json_schema import GenerateJsonSchema


class NoTitles(GenerateJsonSchema):
    """Schema generator that omits the per-field `title` keys (tokens sent every turn)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description}), parsed by
    griffe (as pydantic-ai does). The description is the docstring without its `Args:` section:
    the text (hard-wrapped paragraphs joined) and the other sections (`Returns:`, `Note:`, ...)
    rendered back as `Title:` plus indented items. A section needs a blank line before it.
    """
    if not doc:
        return "", {}
    sections = Docstring(inspect.cleandoc(doc), lineno=1).parse("google", warnings=False)
    kept: list[str] = []
    params: dict[str, str] = {}
    for section in sections:
        if isinstance(section, DocstringSectionText):
            kept.append(_unwrap(section.value.splitlines()))
        elif isinstance(section, DocstringSectionParameters):
            for p in section.value:
                params[p.name] = " ".join(p.description.split())
        elif isinstance(section, DocstringSectionAdmonition):
            body = _unwrap(section.value.description.splitlines())
            kept.append(f"{section.title or 'Note'}:\n" + _indent(body))
        else:
            kept.append(_render_section(section))
    return "\n\n".join(k for k in kept if k).strip(), params


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())


def _render_section(section: DocstringSection) -> str:
    """A non-parameter section as `Title:` and indented `name: description` items."""
    title = section.title or section.kind.value.capitalize()
    value: object = section.value
    lines: list[str] = []
    items: list[object] = list(cast("list[object]", value)) if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, DocstringElement):
            name = getattr(item, "name", "") or str(item.annotation or "")
            desc = " ".join(item.description.split())
            lines.append(f"{name}: {desc}" if name else desc)
        elif isinstance(item, tuple):  # examples: (kind, text)
            lines.append(str(cast("tuple[object, ...]", item)[-1]))
        else:
            lines.append(str(item))
    return f"{title}:\n" + _indent("\n".join(lines))


_BLOCK_START = re.compile(r"^(\s|[-*+>|]|\d+[.)]\s|```)")


def _unwrap(lines: list[str]) -> str:
    """Join hard-wrapped lines of a paragraph with spaces; blank lines, list items, indented
    and fenced lines keep their breaks."""
    out: list[str] = []
    for line in lines:
        if (
            out
            and line
            and out[-1]
            and not _BLOCK_START.match(line)
            and not _BLOCK_START.match(out[-1])
        ):
            out[-1] = f"{out[-1]} {line}"
        else:
            out.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()
