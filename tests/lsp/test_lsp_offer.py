"""The `lsp` tool is offered to API models when a server is installed, never to the embedded
model (`build._offers_lsp`): with it in SmolLM2's catalog, `bench/tasks.py` saw the model call
`lsp` after `ls` in 5 tasks, all of which failed."""

from __future__ import annotations

from dataclasses import dataclass

from tether.agent.assembly.build import _offers_lsp  # pyright: ignore[reportPrivateUsage]
from tether.lsp.tool import lsp_tool


@dataclass
class _Named:
    name: str
    model: str = "m"


def test_not_for_the_embedded_model_nor_twice() -> None:
    local, api = _Named("local"), _Named("anthropic")
    assert not _offers_lsp((local,), [])  # type: ignore[arg-type]
    assert not _offers_lsp((local, api), [])  # type: ignore[arg-type]
    assert _offers_lsp((api, local), [])  # type: ignore[arg-type]
    assert not _offers_lsp((api,), [lsp_tool])  # type: ignore[arg-type]
