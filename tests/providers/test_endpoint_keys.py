"""A settings endpoint with its own `base_url` gets only its own key (the third trial: an entry
`{"type": "openai", "base_url": …, "api_key_env": "GWKEY"}` with GWKEY unset was sent the
user's OPENAI_API_KEY, which the SDK read when tether handed it none; the same for the
anthropic and google types): its `api_key_env`, else what `tether login NAME` stored; a
declared variable left unset is one `auth` line, exit 2, and nothing is sent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kit.cli import run_cli
from kit.faultserver import FaultServer, text

USERS_OPENAI_KEY = "sk-users-own-openai-key-0123456789"


def _settings(entry: dict[str, str]) -> None:
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"providers": {"gw": entry}}))


def _run(server: FaultServer, home: Path, **env: str) -> tuple[int, str]:
    ran = run_cli(
        ["run", "-m", "gw/m", "--no-session", "--output-format", "text", "hi"],
        home,
        cwd=None,
        input="",
        **{"OPENAI_API_KEY": USERS_OPENAI_KEY, **env},
    )
    return ran.returncode, ran.stderr


def test_an_endpoint_never_gets_the_users_openai_key(tmp_path: Path) -> None:
    with FaultServer([text("ok"), text("ok"), text("ok")]) as server:
        _settings({"type": "openai", "base_url": server.openai_url, "api_key_env": "GWKEY"})
        code, err = _run(server, tmp_path / "home")
        assert code == 2 and server.requests == [], err
        assert err.strip().splitlines()[-1] == (
            "tether: no key for gw: set GWKEY or store one with `tether login gw`"
        ), err
        code, err = _run(server, tmp_path / "home", GWKEY="gw-own-key")
        assert code == 0, err
        assert server.requests[-1]["headers"]["authorization"] == "Bearer gw-own-key"
        # no api_key_env: a keyless gateway, never the type's default variable
        _settings({"type": "openai", "base_url": server.openai_url})
        code, err = _run(server, tmp_path / "home")
        assert code == 0, err
        assert USERS_OPENAI_KEY not in server.requests[-1]["headers"]["authorization"]
        stored = run_cli(["login", "gw", "--key-stdin"], tmp_path / "home", input="gw-stored\n")
        assert stored.returncode == 0, stored.stderr
        code, err = _run(server, tmp_path / "home")
        assert code == 0, err
        assert server.requests[-1]["headers"]["authorization"] == "Bearer gw-stored"


@pytest.mark.parametrize("type_", ["anthropic", "google"])
def test_other_types_without_their_own_key_refuse(tmp_path: Path, type_: str) -> None:
    with FaultServer([text("ok")]) as server:
        _settings({"type": type_, "base_url": server.openai_url})
        code, err = _run(
            server, tmp_path / "home", ANTHROPIC_API_KEY="sk-ant-users", GEMINI_API_KEY="users-gem"
        )
        assert code == 2 and server.requests == [], err
        assert "no key for gw: set providers.gw.api_key_env" in err, err
