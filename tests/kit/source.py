"""Parsing tether's own source for the architecture tests."""

from __future__ import annotations

import ast
from pathlib import Path


def parse_file(path: Path) -> ast.Module:
    """`ast.parse` of `path`, tried again on `SystemError: AST constructor recursion depth
    mismatch`: CPython 3.11 (before 3.11.8) keeps the AST builder's depth in state shared by
    every thread, so a compile in another thread of the test process (an import of a module
    without a .pyc in a fresh clone, by a thread an earlier test left running) can upset a
    parse here (https://github.com/python/cpython/issues/106905)."""
    text = path.read_text()
    for _ in range(4):
        try:
            return ast.parse(text, str(path))
        except SystemError:
            continue
    return ast.parse(text, str(path))
