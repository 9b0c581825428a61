"""Path rules compare resolved paths (trial5, MEDIUM security): `read(~/.ssh/**)` denied
`read(~/.ssh/id_rsa)` but not the same key by its absolute path or a `../` path, which
`--add-dir ~/.ssh:ro` made readable. Claude Code's four pattern kinds: `//abs`, `~/`, `/x`
(anchored at the working folder), `x` / `./x` (relative to it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.cli import run_cli
from tether.permissions.rules import Rules


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "home" / "u"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_rsa").write_text("KEY")
    (h / "proj").mkdir()
    monkeypatch.setenv("HOME", str(h))
    return h


@pytest.mark.parametrize(
    "spelling",
    ["~/.ssh/id_rsa", "{home}/.ssh/id_rsa", "../.ssh/id_rsa", "./../.ssh/id_rsa",
     "{home}/proj/../.ssh/./id_rsa", "{home}/proj/link/id_rsa"],
)  # fmt: skip
def test_a_home_rule_denies_every_spelling_of_the_file(home: Path, spelling: str) -> None:
    (home / "proj" / "link").symlink_to(home / ".ssh")
    rules = Rules.of(deny=["Read(~/.ssh/**)"])
    decision = rules.decide("read", {"path": spelling.format(home=home)}, str(home / "proj"))
    assert decision.action == "deny" and decision.rule is not None


def test_the_four_pattern_kinds(home: Path) -> None:
    root = str(home / "proj")
    rules = Rules.of(
        deny=[f"Read(/{home}/.ssh/**)"], ask=["Edit(/src/**)"], allow=["Edit(./lib/**)"]
    )
    assert rules.decide("read", {"path": "../.ssh/id_rsa"}, root).action == "deny"  # //abs
    assert rules.decide("edit", {"path": f"{root}/src/a.py"}, root).action == "ask"
    assert rules.decide("edit", {"path": "x/src/a.py"}, root).action is None  # anchored
    assert rules.decide("edit", {"path": "lib/a.py"}, root).action == "allow"
    assert rules.decide("edit", {"path": "../proj/lib/a.py"}, root).action == "allow"


def test_an_allow_rule_needs_every_spelling(home: Path) -> None:
    """A symlink inside an allowed folder that leads out of it is not allowed through it."""
    root = home / "proj"
    (root / "src").mkdir()
    (root / "src" / "out").symlink_to(home / ".ssh")
    rules = Rules.of(allow=["Read(src/**)"])
    assert rules.decide("read", {"path": "src/a.py"}, str(root)).action == "allow"
    assert rules.decide("read", {"path": "src/out/id_rsa"}, str(root)).action is None


def test_permissions_check_agrees(home: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "settings.json").write_text('{"permissions": {"deny": ["Read(~/.ssh/**)"]}}')
    env_home = tmp_path / "th"
    for spelling in (f"read({home}/.ssh/id_rsa)", "read(../.ssh/id_rsa)"):
        out = run_cli(
            ["permissions", "check", spelling],
            env_home,
            cwd=home / "proj",
            HOME=str(home),
            TETHER_CONFIG_DIR=str(cfg),
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("deny\tRead(~/.ssh/**)"), (spelling, out.stdout, out.stderr)
