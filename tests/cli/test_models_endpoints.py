"""`tether models NAME` / `models --test NAME` for a settings endpoint of a built-in type
(`{"type": "openai", "base_url": …}`, settings.md's own example): the third trial's
"unknown provider 'gw'", and so a TUI `/model` picker that never listed the endpoint's other
models. The listing asks the endpoint with its own key (never `OPENAI_API_KEY`) and is cached
where the picker reads it."""

from __future__ import annotations

import json
import os
from pathlib import Path

from kit.cli import run_cli
from kit.faultserver import FaultServer
from tether.settings import AgentConfig
from tether.tui.pickers import model_choices


def _settings(url: str) -> AgentConfig:
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    providers = {"gw": {"type": "openai", "base_url": url, "api_key_env": "GWKEY", "model": "m"}}
    (config / "settings.json").write_text(json.dumps({"providers": providers}))
    return AgentConfig.model_validate({"providers": providers})


def test_models_lists_a_settings_endpoint_of_a_builtin_type(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with FaultServer([], models=["m", "m2"]) as server:
        cfg = _settings(server.openai_url)
        listed = run_cli(["models", "gw"], home, GWKEY="gw-own", OPENAI_API_KEY="sk-user")
        tested = run_cli(["models", "--test", "gw"], home, GWKEY="gw-own", OPENAI_API_KEY="sk-user")
        gets = list(server.gets)
    assert listed.returncode == 0, listed.stderr
    row = json.loads(listed.stdout)
    assert (row["provider"], row["source"], row["models"]) == ("gw", "provider", ["m", "m2"])
    assert tested.returncode == 0, tested.stderr
    assert tested.stdout.startswith("gw: ok: 2 models (m, m2) in ")
    assert {g["headers"].get("authorization") for g in gets} == {"Bearer gw-own"}
    # the TUI's /model picker lists what the endpoint served (from the cache the listing wrote)
    os.environ["TETHER_HOME"] = str(home)
    try:
        names = [c.key for c in model_choices(cfg, "gw/m")]
    finally:
        del os.environ["TETHER_HOME"]
    assert "gw/m2" in names


def test_an_endpoint_without_its_own_key_is_never_sent_the_users(tmp_path: Path) -> None:
    with FaultServer([], models=["m"]) as server:
        _settings(server.openai_url)
        tested = run_cli(["models", "--test", "gw"], tmp_path / "home", OPENAI_API_KEY="sk-user")
        listed = run_cli(["models"], tmp_path / "home")  # built-ins keyless: nothing leaves
        gets = list(server.gets)
    assert tested.returncode == 2, tested.stderr
    assert tested.stderr == (
        "tether: --test 'gw': no key for gw: set GWKEY or store one with `tether login gw`\n"
    )
    rows = {json.loads(x)["provider"]: json.loads(x) for x in listed.stdout.splitlines()}
    assert rows["gw"]["source"] == "settings" and rows["gw"]["models"] == ["m"]
    assert "no key for gw" in rows["gw"]["note"]
    assert gets == []  # nothing was sent to the gateway, the user's key least of all
