"""The embedded model is offered a smaller catalog (`build.EMBEDDED_WITHHELD`: no `lsp`, no
background-shell tools): with `lsp` in SmolLM2's catalog `bench/tasks.py` saw the model call it
after `ls` in 5 tasks (all failed), and with the shell tools it lost read_json_port. An API
model is offered `lsp` when a server is installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.agent.assembly import build


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A language server counts as installed (the suite's conftest says none is)."""

    def installed(*_a: object, **_k: object) -> tuple[tuple[str], tuple[()]]:
        return (("python",), ())

    monkeypatch.setattr(build, "resolve_servers", installed)


def _names(tmp_path: Path, model: str) -> set[str]:
    _root, _cfg, _chain, tools, _refused = build.from_settings_files(
        tmp_path, model=model, base_url=None, overrides=None, note=lambda _l: None
    )
    return {t.name for t in tools}


@pytest.mark.usefixtures("servers")
def test_the_embedded_model_gets_no_lsp_and_no_background_shell_tools(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    names = _names(tmp_path, "local")
    assert "bash" in names and "read" in names
    assert not names & build.EMBEDDED_WITHHELD


@pytest.mark.usefixtures("servers")
def test_an_api_model_gets_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    names = _names(tmp_path, "openai/gpt-4o")
    assert names >= build.EMBEDDED_WITHHELD
