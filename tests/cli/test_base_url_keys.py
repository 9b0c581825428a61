"""A key `tether login PROVIDER` stored goes only to that provider's own endpoint: `tether models
openai --base-url X` and `tether run --model openai/m --base-url X` never send it to X (the
fourth trial's leftover: the stored key went to any URL typed after a built-in name). A key the
user named for the run (`--token`, the provider's environment variable, as Codex's and Claude
Code's `*_BASE_URL` + `*_API_KEY` pairing) still goes; a `providers.NAME` entry with its own
`base_url` and `tether login NAME` is how a stored key is named for another URL."""

from __future__ import annotations

from pathlib import Path

from kit.cli import run_cli
from kit.faultserver import FaultServer, text


def _login(home: Path, provider: str, key: str) -> None:
    done = run_cli(["login", provider, "--key-stdin", "--store", "file"], home, input=key + "\n")
    assert done.returncode == 0, done.stderr


def _auth(rows: list[dict[str, object]]) -> set[object]:
    return {r["headers"].get("authorization") for r in rows}  # type: ignore[union-attr]


def test_models_base_url_never_gets_the_stored_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _login(home, "openai", "sk-stored-secret")
    with FaultServer([], models=["m"]) as server:
        listed = run_cli(["models", "openai", "--base-url", server.openai_url], home)
        named = run_cli(
            ["models", "openai", "--base-url", server.openai_url], home, OPENAI_API_KEY="sk-env"
        )
        gets = list(server.gets)
    assert listed.returncode == 0 and named.returncode == 0, listed.stderr + named.stderr
    assert len(gets) == 2
    assert "sk-stored-secret" not in repr(gets)
    assert gets[0]["headers"].get("authorization") == "Bearer not-needed"
    assert gets[1]["headers"].get("authorization") == "Bearer sk-env"


def test_run_base_url_never_gets_the_stored_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _login(home, "openai", "sk-stored-secret")
    with FaultServer([text("hi"), text("again")]) as server:
        args = ["run", "--model", "openai/m", "--base-url", server.openai_url, "say hi"]
        plain = run_cli(args, home)
        token = run_cli([*args[:-1], "--token", "sk-typed", "say hi"], home)
        requests = list(server.requests)
    assert plain.returncode == 0 and token.returncode == 0, plain.stderr + token.stderr
    assert "sk-stored-secret" not in repr(requests)
    assert _auth(requests) == {"Bearer not-needed", "Bearer sk-typed"}
