"""`kit.source.parse_file`: the architecture tests survive CPython 3.11's shared AST depth
state (a parse upset by another thread's compile raises SystemError once; seen in CI)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kit.source import parse_file


def test_a_parse_upset_by_another_thread_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "m.py"
    source.write_text("import os\n")
    real = ast.parse
    calls: list[int] = []

    def upset_once(*args: Any, **kwargs: Any) -> ast.Module:
        calls.append(1)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=141, after=157)")
        return real(*args, **kwargs)

    monkeypatch.setattr(ast, "parse", upset_once)
    tree = parse_file(source)
    assert isinstance(tree.body[0], ast.Import) and len(calls) == 2


def test_a_syntax_error_is_not_hidden(tmp_path: Path) -> None:
    source = tmp_path / "bad.py"
    source.write_text("def (\n")
    with pytest.raises(SyntaxError):
        parse_file(source)
