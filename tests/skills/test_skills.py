"""Agent Skills: the spec's frontmatter rules, discovery and the settings, the `skill` tool and
the read-only skill folders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tether.messages import ToolCallBlock
from tether.sandbox.policy import PathPolicy
from tether.settings.trust import approve, check_trust
from tether.skills.catalog import Found, discover, entries, load_catalog, merge, skill_folders
from tether.skills.spec import NAME_RX, check_skill_meta, parse_skill
from tether.skills.tool import skill_read_roots, skill_tool
from tether.tools.base import ToolContext
from tether.tools.builtin.files import read, write
from tether.tools.exec.run import run_tool
from tether.tools.registry import ToolRegistry


def write_skill(base: Path, name: str, description: str = "Does a thing. Use when asked.", body: str = "Steps.", *, meta: str = "") -> Path:
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{meta}---\n{body}\n")
    return folder


@given(st.text(alphabet="abz09-_A.", min_size=0, max_size=70))
def test_a_name_is_valid_exactly_when_the_spec_says(name: str) -> None:
    problems = check_skill_meta({"name": name, "description": "d"}, folder_name=name)
    spec_ok = (
        0 < len(name) <= 64
        and all(c in "abcdefghijklmnopqrstuvwxyz0123456789-" for c in name)
        and not name.startswith("-")
        and not name.endswith("-")
        and "--" not in name
    )
    assert (problems == []) == spec_ok
    assert bool(NAME_RX.match(name)) == (spec_ok or (len(name) > 64 and bool(NAME_RX.match(name))))


def test_the_rules_of_the_spec() -> None:
    ok = {"name": "pdf", "description": "Fills forms."}
    assert check_skill_meta(ok, "pdf") == []
    assert any("differs" in p for p in check_skill_meta(ok, "other"))
    assert check_skill_meta({"name": "pdf"}, "pdf") == ["`description` is missing or empty"]
    assert any("1024" in p for p in check_skill_meta({**ok, "description": "x" * 1025}, "pdf"))
    assert any("metadata" in p for p in check_skill_meta({**ok, "metadata": {"a": 1}}, "pdf"))
    assert check_skill_meta({**ok, "metadata": {"a": "b"}, "license": "MIT", "allowed-tools": "read bash", "x-other": 1}, "pdf") == []
    got = parse_skill("---\nname: pdf\ndescription: Fills\n  forms.\nallowed-tools: read bash\n---\n\nBody\n", folder_name="pdf", location="/s/pdf/SKILL.md")
    assert not isinstance(got, list)
    assert (got.description, got.body, got.allowed_tools) == ("Fills forms.", "Body", ("read", "bash"))
    assert parse_skill("no frontmatter", folder_name="x", location="/x")[0].startswith("no YAML")  # type: ignore[index]
    assert "does not parse" in parse_skill("---\nname: [x\n---\nb", folder_name="x", location="/x")[0]  # type: ignore[index]


def test_discovery_precedence_and_one_warning_per_invalid_skill(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    user, home = tmp_path / "cfg", tmp_path / "home"
    write_skill(root / ".agents" / "skills", "shared", "project's")
    write_skill(root / ".tether" / "skills", "tethered")
    write_skill(user / "skills", "shared", "user's")
    write_skill(user / "skills", "mine")
    write_skill(home / ".claude" / "skills", "claudes")
    bad = write_skill(root / ".agents" / "skills", "Bad_Name")
    (root / ".agents" / "skills" / "notes").mkdir()  # a folder without SKILL.md is not a skill
    warnings: list[str] = []
    found = discover(skill_folders(root, root, user, home), warnings.append)
    assert [(f.skill.name, f.source) for f in found] == [
        ("shared", "project"), ("tethered", "project"), ("mine", "user"), ("claudes", "claude")
    ]
    assert found[0].skill.description == "project's"
    assert len(warnings) == 1 and str(bad) in warnings[0] and warnings[0].startswith("warning: skill")


def test_settings_enabled_allow_deny_and_extensions(tmp_path: Path) -> None:
    write_skill(tmp_path / "s", "a")
    write_skill(tmp_path / "s", "b")
    ext = parse_skill("---\nname: ext\ndescription: e\n---\nx", folder_name="ext", location="/e")
    assert not isinstance(ext, list)
    found = discover([(tmp_path / "s", "project")], lambda _l: None)

    def names(fs: list[Found]) -> list[str]:
        return [f.skill.name for f in fs]

    assert names(merge(found, [ext], enabled=True, allow=None, deny=[])) == ["a", "b", "ext"]
    assert names(merge(found, [ext], enabled=True, allow=["a"], deny=[])) == ["a", "ext"]
    assert names(merge(found, [ext], enabled=True, allow=None, deny=["a", "ext"])) == ["b"]
    # skills disabled: the user's skills go, tether's authoring skill stays unless denied
    assert names(merge(found, [ext], enabled=False, allow=None, deny=[])) == ["ext"]
    assert merge(found, [ext], enabled=False, allow=None, deny=["ext"]) == []
    builtin = load_catalog(tmp_path, tmp_path, user_dir=tmp_path / "c", home=tmp_path, enabled=True, allow=["zzz"], deny=[])
    assert [f.skill.name for f in builtin] == ["write-skill"]  # tether's own, kept under an allowlist


def test_project_skills_need_no_trust_but_commands_do(tmp_path: Path) -> None:
    root = tmp_path / "p"
    (root / ".tether").mkdir(parents=True)
    (root / ".tether" / "settings.json").write_text(json.dumps({"tools": {"timeout": "30s"}}))
    approve(root)
    write_skill(root / ".tether" / "skills", "fresh")
    assert check_trust(root).trusted  # a new skill does not untrust the project
    (root / ".tether" / "commands").mkdir()
    (root / ".tether" / "commands" / "review.md").write_text("Review $ARGUMENTS")
    assert not check_trust(root).trusted  # a new command file does


def call(tool_ctx: ToolContext, registry: ToolRegistry, tool_name: str, **args: object):
    block = ToolCallBlock(id="c1", name=tool_name, arguments=dict(args))
    return asyncio.run(run_tool(registry, block, tool_ctx, timeout_s=10)).block


def test_the_skill_tool_gives_instructions_and_files_and_lists_names_when_unknown(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "skills", "pdf", body="Use scripts/fill.py.")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "fill.py").write_text("print(1)")
    catalog = entries(discover([(tmp_path / "skills", "user")], lambda _l: None))
    registry = ToolRegistry()
    registry.add(skill_tool(catalog, user_dir=tmp_path))
    ctx = ToolContext.create(tmp_path)
    got = call(ctx, registry, "skill", name="pdf")
    assert not got.is_error
    assert got.text.startswith(f'<skill name="pdf" folder="{folder.resolve()}">\nUse scripts/fill.py.\n</skill>')
    assert "- scripts/fill.py" in got.text and "sandbox hides" in got.text
    unknown = call(ctx, registry, "skill", name="nope")
    assert unknown.is_error and "the skills are: pdf" in unknown.text
    (folder / "SKILL.md").write_text("---\nname: pdf\n---\n")
    assert "no longer valid" in call(ctx, registry, "skill", name="pdf").text


def test_read_may_open_a_skill_folder_read_only_and_nothing_else_outside(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    folder = write_skill(tmp_path / "skills", "pdf")
    (folder / "ref.md").write_text("reference text")
    (folder / ".env").write_text("SECRET=1")
    (tmp_path / "other.txt").write_text("not a skill")
    catalog = entries(discover([(tmp_path / "skills", "user")], lambda _l: None))
    roots = skill_read_roots(catalog, refused=[tmp_path / "cfg"])
    assert roots == (str(folder.resolve()),)
    policy = PathPolicy(deny_read=("**/.env",), read_roots=roots)
    ctx = ToolContext.create(work, policy=policy)
    registry = ToolRegistry()
    registry.add(read)
    registry.add(write)
    ok = call(ctx, registry, "read", path=str(folder / "ref.md"))
    assert not ok.is_error and "reference text" in ok.text
    assert call(ctx, registry, "read", path=str(tmp_path / "other.txt")).is_error
    assert call(ctx, registry, "read", path=str(folder / ".env")).is_error
    written = call(ctx, registry, "write", path=str(folder / "x.md"), content="no")
    assert written.is_error and not (folder / "x.md").exists()
    # a skill folder that is (a link to) a folder holding a refused one is never a read root
    homey = tmp_path / "homey"
    write_skill(tmp_path, "homey")
    (homey / "cfg").mkdir()
    (tmp_path / "skills" / "evil").symlink_to(homey)
    (homey / "SKILL.md").write_text("---\nname: evil\ndescription: d\n---\nx\n")
    linked = entries(discover([(tmp_path / "skills", "user")], lambda _l: None))
    assert [s.name for s in linked] == ["evil", "pdf"]
    assert skill_read_roots(linked, refused=[homey / "cfg"]) == (str(folder.resolve()),)
