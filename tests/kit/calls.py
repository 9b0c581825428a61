"""Tool calls for tests."""

from __future__ import annotations

import itertools
from typing import Any

from tether.messages import ToolCallBlock

_ids = itertools.count()


def make_call(name: str, /, **arguments: Any) -> ToolCallBlock:
    """A call of the tool `name` with `arguments`, under a fresh id (`call_<n>`)."""
    return ToolCallBlock(id=f"call_{next(_ids)}", name=name, arguments=arguments)
