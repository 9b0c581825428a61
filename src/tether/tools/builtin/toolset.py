"""The built-in tool set (`builtin_tools`).

Owns: `builtin_tools()`, the default tools in offering order: read, write, edit, ls, glob, grep,
bash, shell_output, shell_kill, todo. The tools themselves live in `tether.tools.builtin.files`, `tether.tools.builtin.search` and
`tether.tools.builtin.bash`.
"""

from __future__ import annotations

from tether.tools.base import Tool
from tether.tools.builtin.bash import bash
from tether.tools.builtin.files import edit, ls, read, write
from tether.tools.builtin.search import glob_, grep
from tether.tools.builtin.shells import shell_kill, shell_output
from tether.tools.builtin.todo import todo


def builtin_tools() -> list[Tool]:
    """The built-in tools (read/ls/glob/grep/shell_output/shell_kill/todo are `safe`; write/edit/bash are not)."""
    return [read, write, edit, ls, glob_, grep, bash, shell_output, shell_kill, todo]
