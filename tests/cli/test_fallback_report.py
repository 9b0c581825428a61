"""A fallback is said in every format (trial5: in `text` and `json` a run asked for `gw/down`
was answered by `gw/m` without a word, and the json result had no model), and a chain's
failed head is not tried again by the run's later requests (sticky fallback)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kit.cli import run_cli
from kit.faultserver import FaultServer, Step, status, text, tool


def _endpoint(url: str) -> None:
    config = Path(os.environ["TETHER_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    settings = {
        "model": ["gw/down", "gw/m"],
        "providers": {"gw": {"type": "openai-compatible", "base_url": url}},
        "retry": {"max_attempts": 2, "base": "1ms", "max": "2ms"},
        "tools": {"approval": "auto"},
    }
    (config / "settings.json").write_text(json.dumps(settings))


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_fallback_is_one_stderr_line_and_the_json_names_the_model(
    tmp_path: Path, fmt: str
) -> None:
    models: list[str] = []
    good = [tool("bash", command="echo hi"), text("done")]

    def step(_n: int, _path: str, body: Any) -> Step:
        models.append(body["model"])
        if body["model"] == "down":
            return status(500, {"error": {"message": "fake 500", "type": "server_error"}})
        return good[sum(1 for m in models if m == "m") - 1]

    work = tmp_path / "work"
    work.mkdir()
    with FaultServer(step) as server:
        _endpoint(server.openai_url)
        ran = run_cli(
            ["run", "--no-session", "--output-format", fmt, "go"], tmp_path / "home", cwd=work
        )
    assert ran.returncode == 0, ran.stderr
    # the head's 2 attempts once; the second request went straight to gw/m
    assert models == ["down", "down", "m", "m"]
    said = [line for line in ran.stderr.splitlines() if "using gw/m" in line]
    assert said == [f"tether: warning: gw/down failed ({said[0].split('(', 1)[1]}"]
    assert "fake 500" in said[0]
    [usage] = [line for line in ran.stderr.splitlines() if line.startswith("tether: usage:")]
    assert usage.endswith(" · by gw/m")
    if fmt == "json":
        result = json.loads(ran.stdout)
        assert result["model"] == "gw/m" and result["answer"] == "done"
    else:
        assert ran.stdout == "done\n"
