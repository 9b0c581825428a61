"""The sandbox wrappers: argv shapes (property tests), detection and forcing, the Landlock
launcher's argument handling and its refusal to run unconfined."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.sandbox import sandbox_for
from tether.errors import ConfigError, SandboxUnavailableError
from tether.sandbox import landlock, launcher
from tether.sandbox.base import SANDBOX_ENV, launcher_prefix
from tether.sandbox.bwrap import BwrapSandbox
from tether.sandbox.config import SandboxConfig
from tether.sandbox.detect import available, detect_sandbox
from tether.sandbox.landlock_sandbox import LandlockSandbox

argvs = st.lists(st.text(st.characters(blacklist_characters="\x00"), max_size=12), min_size=1)
BWRAP = BwrapSandbox("/usr/bin/bwrap")
LANDLOCK = LandlockSandbox(abi=4, python="/usr/bin/python3")


@given(argvs, st.booleans())
def test_bwrap_argv_passes_the_command_verbatim(argv: list[str], net: bool) -> None:
    root = Path("/nonexistent/proj")
    cfg = SandboxConfig(root=root, network=net)
    out = BWRAP.wrap(argv, cfg)
    sep = out.index("--")
    inner = out[sep + 1 :]  # the launcher supervising unix-socket connects, then the command
    assert inner[:5] == launcher_prefix()
    assert inner[inner.index("--") + 1 :] == argv  # an argv starting with "-" is the command
    opts = out[:sep]
    assert opts[0] == "/usr/bin/bwrap"
    assert ("--unshare-net" in opts) is not net
    assert opts[opts.index("--cap-drop") + 1] == "ALL"
    i = opts.index("--ro-bind")
    assert opts[i : i + 3] == ["--ro-bind", "/", "/"]
    j = len(opts) - 1 - opts[::-1].index(str(root))  # the last mention of root
    assert opts[j - 2 : j + 1] == ["--bind", str(root), str(root)]
    assert j > opts.index("/tmp")  # root is bound after the private /tmp, so it stays visible
    assert "--new-session" not in opts  # the process-group kill must reach the command


def test_bwrap_git_is_rebound_read_only_after_root(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    out = BWRAP.wrap(["true"], SandboxConfig(root=tmp_path))
    git = str(tmp_path / ".git")
    k = out.index(git)
    assert out[k - 1] == "--ro-bind" and out[k + 1] == git
    assert k > out.index(str(tmp_path))
    assert "--unshare-pid" in BWRAP.wrap(["x"], SandboxConfig(root=tmp_path, isolate_pids=True))


@given(argvs, st.booleans(), st.lists(st.sampled_from(["/a", "/b c", "-x"]), max_size=3))
def test_landlock_launcher_argv_round_trips(argv: list[str], net: bool, extra: list[str]) -> None:
    cfg = SandboxConfig(root=Path("/r"), network=net, extra_writable=tuple(map(Path, extra)))
    out = LANDLOCK.wrap(argv, cfg)
    assert out[:5] == launcher_prefix("/usr/bin/python3")
    lists, values, flags, command = launcher.parse(out[5:])
    assert command == argv and lists["--keep"] == [] and "--landlock" in flags
    assert lists["--hide"] == [str(p) for p in cfg.hidden_dirs()]
    # read-only: no `.git` under /r; only this harness's own interpreter/package if under /tmp
    assert lists["--write"] == ["/r", *extra] and lists["--ro"] == [str(p) for p in cfg.readonly()]
    assert ("--net" in flags) is net
    assert all(Path(p).is_relative_to("/tmp") for p in lists["--ro"])
    assert values["--tmp"] == str(LANDLOCK.tmp_dir)
    # the unix-socket guard: sockets in the writable folders and the private temp folder only
    assert bytes.fromhex(values["--guard"]) and lists["--socket"][-1] == str(LANDLOCK.tmp_dir)


def test_landlock_launcher_refuses_to_run_unconfined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    args = ["--landlock", "--write", str(tmp_path), "--", "touch", str(tmp_path / "ran")]
    assert launcher.main(args) == 126 and not (tmp_path / "ran").exists()
    assert "refusing to run unconfined" in capsys.readouterr().err
    assert launcher.main(["--bogus"]) == 2
    assert launcher.main(["--write", "/x"]) == 2  # no `--`
    assert launcher.main(["--guard", "zz", "--", "true"]) == 2


def test_landlock_launcher_exit_codes(tmp_path: Path) -> None:
    sb = sandbox_for("landlock-child")
    assert sb is not None
    cfg = SandboxConfig(root=tmp_path)
    assert subprocess.run(sb.wrap(["bash", "-c", "exit 7"], cfg), check=False).returncode == 7
    missing = subprocess.run(sb.wrap(["no-such-cmd-xyz"], cfg), check=False, capture_output=True)
    assert missing.returncode == 127 and b"no-such-cmd-xyz" in missing.stderr


def test_write_rights_grow_with_the_abi() -> None:
    assert not landlock.write_rights(1) & (landlock.REFER | landlock.TRUNCATE)
    assert landlock.write_rights(2) & landlock.REFER
    assert landlock.write_rights(3) & landlock.TRUNCATE
    assert not landlock.write_rights(7) & (landlock.READ_FILE | landlock.EXECUTE)


def test_detect_and_force(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SANDBOX_ENV, "none")
    assert detect_sandbox() is None
    monkeypatch.setenv(SANDBOX_ENV, "sideways")
    with pytest.raises(ConfigError, match=SANDBOX_ENV):
        detect_sandbox()
    for kind in ("bwrap", "landlock"):
        monkeypatch.setenv(SANDBOX_ENV, kind)
        if available(kind) is None:
            with pytest.raises(SandboxUnavailableError, match=kind):
                detect_sandbox()
        else:
            found = detect_sandbox()
            assert found is not None and found.kind == kind and detect_sandbox() is found
    monkeypatch.delenv(SANDBOX_ENV)
    auto = detect_sandbox()
    if available("bwrap") is not None:
        assert auto is available("bwrap")  # bwrap is preferred
    elif available("landlock") is not None:
        assert auto is available("landlock")
    else:
        assert auto is None


async def test_a_failed_child_confinement_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.messages import ToolCallBlock
    from tether.tools import ToolContext, ToolRegistry, builtin_tools, run_tool_call

    sb = sandbox_for("landlock-child")
    assert isinstance(sb, LandlockSandbox) and sb.in_child

    def broken(ruleset: int, **kwargs: object) -> None:
        raise OSError(1, "simulated failure")

    monkeypatch.setattr(landlock, "enter", broken)
    ctx = ToolContext.create(tmp_path, env={"PATH": "/usr/bin:/bin"}, sandbox=sb)
    block = ToolCallBlock(id="x", name="bash", arguments={"command": "touch ran"})
    r = await run_tool_call(ToolRegistry(builtin_tools()), block, ctx)
    assert r.is_error and not (tmp_path / "ran").exists()
    unsupported = LandlockSandbox(abi=0, in_child=True)  # build_ruleset refuses in the parent
    ctx = ToolContext.create(tmp_path, env={"PATH": "/usr/bin:/bin"}, sandbox=unsupported)
    r = await run_tool_call(ToolRegistry(builtin_tools()), block, ctx)
    assert r.is_error and "Landlock" in r.text and not (tmp_path / "ran").exists()
