"""`/name args` commands: parsing, `$ARGUMENTS` / `$1`…`$9` substitution (pure), loading prompt
files and skills, and resolution."""

from __future__ import annotations

import shlex
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tether.prompt.facts import SkillEntry
from tether.skills.commands import (
    expand,
    load_commands,
    parse_command_file,
    parse_invocation,
    resolve,
    substitute,
)


def test_invocations() -> None:
    assert parse_invocation("/review src/a.py  fast ") == ("review", "src/a.py  fast")
    assert parse_invocation("/review") == ("review", "")
    assert parse_invocation("//literal") is None
    assert parse_invocation("/usr/bin/env python") is None
    assert parse_invocation("hello /x") is None and parse_invocation("/") is None


def test_substitution() -> None:
    assert substitute("Review $ARGUMENTS now", "a.py b.py") == "Review a.py b.py now"
    assert substitute("Compare $1 with $2, not $3.", 'a.py "b c.py"') == "Compare a.py with b c.py, not ."
    assert substitute("Plain prompt.", "extra words") == "Plain prompt.\n\nARGUMENTS: extra words"
    assert substitute("Plain prompt.", "  ") == "Plain prompt."
    assert substitute("$1$ARGUMENTS", "$ARGUMENTS") == "$ARGUMENTS$ARGUMENTS"  # never re-substituted
    assert substitute("unbalanced $1", 'a "b') == "unbalanced a"


safe_words = st.lists(st.text(alphabet="abcXYZ012_.", min_size=1, max_size=6), max_size=9)


@given(safe_words, st.text(alphabet="abc $1-9ARGUMENTS.\n", max_size=40))
def test_substitution_replaces_every_placeholder(words: list[str], template: str) -> None:
    args = " ".join(words)
    out = substitute(template, args)
    if "$ARGUMENTS" not in template and not any(f"${i}" in template for i in range(1, 10)):
        assert out == template or out == f"{template.rstrip()}\n\nARGUMENTS: {args}"
        return
    # what is left of a placeholder can only come from the arguments (here: none have `$`)
    assert "$ARGUMENTS" not in out
    for i in range(1, 10):
        assert f"${i}" not in out
    for w in words:
        if f"${words.index(w) + 1}" in template:
            assert w in out
    assert shlex.split(args) == words


def test_prompt_files_then_skills_with_project_files_only_when_trusted(tmp_path: Path) -> None:
    cwd, user = tmp_path / "p", tmp_path / "cfg"
    (cwd / ".tether" / "commands").mkdir(parents=True)
    (user / "commands").mkdir(parents=True)
    (cwd / ".tether" / "commands" / "review.md").write_text(
        "---\ndescription: Review a file\nargument-hint: FILE\nmodel: openai/gpt-4o\n---\nReview $1."
    )
    (user / "commands" / "review.md").write_text("user's review")
    (user / "commands" / "fix.md").write_text("Fix $ARGUMENTS\nthoroughly")
    (user / "commands" / "bad name.md").write_text("x")
    (user / "commands" / "empty.md").write_text("---\ndescription: d\n---\n")
    skill = SkillEntry(name="fix", description="a skill shadowed", location=str(tmp_path / "s" / "SKILL.md"))
    pdf = SkillEntry(name="pdf", description="Fills forms.", location=str(tmp_path / "pdf" / "SKILL.md"), argument_hint="FORM")
    warnings: list[str] = []
    trusted = load_commands(cwd, user_dir=user, project_trusted=True, skills=[skill, pdf], warn=warnings.append)
    assert {n: (c.source, c.description) for n, c in trusted.items()} == {
        "review": ("project", "Review a file"),
        "fix": ("user", "Fix $ARGUMENTS"),
        "pdf": ("skill", "Fills forms."),
    }
    assert trusted["review"].model == "openai/gpt-4o" and trusted["review"].argument_hint == "FILE"
    assert len(warnings) == 2  # the bad name and the empty body
    untrusted = load_commands(cwd, user_dir=user, project_trusted=False)
    assert untrusted["review"].source == "user"


def test_resolve_and_expand_a_skill_command(tmp_path: Path) -> None:
    folder = tmp_path / "pdf"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: pdf\ndescription: Fills forms.\n---\nFill $ARGUMENTS.\n")
    pdf = SkillEntry(name="pdf", description="Fills forms.", location=str(folder / "SKILL.md"))
    commands = load_commands(tmp_path, user_dir=tmp_path / "cfg", project_trusted=False, skills=[pdf])
    found = resolve("/pdf tax.pdf", commands)
    assert isinstance(found, tuple)
    assert expand(*found) == f'<skill name="pdf" folder="{folder}">\nFill tax.pdf.\n</skill>'
    assert resolve("/nope x", commands) == "unknown command /nope (commands: /pdf)"
    assert resolve("just text", commands) is None


def test_a_command_file_is_one_line_when_invalid() -> None:
    assert parse_command_file("---\nmodel: 3\n---\nx", name="a", location="/a", source="user") == (
        "`model` must be text (provider/model)"
    )


def test_a_project_skill_grants_its_allowed_tools_only_once_the_project_is_approved(
    tmp_path: Path,
) -> None:
    """The third trial: `/deploy` of a cloned repo's skill (`allowed-tools: bash write`) ran
    `bash` unasked in `ask` mode, though skills load without `tether trust`. A project skill's
    `allowed-tools` apply once the project is approved; a user's own skill's always do."""
    from tether.prompt.facts import SkillEntry
    from tether.skills.commands import load_commands, skill_command

    def skill(folder: Path, source: str) -> SkillEntry:
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            "---\nname: deploy\ndescription: Deploys.\nallowed-tools: bash write\n---\nShip it.\n"
        )
        return SkillEntry(
            name="deploy", description="Deploys.", location=str(folder / "SKILL.md"),
            source=source,  # type: ignore[arg-type]
        )

    project = skill(tmp_path / "p" / ".agents" / "skills" / "deploy", "project")
    user = skill(tmp_path / "u" / "skills" / "deploy", "user")
    for entry, trusted, tools in [
        (project, False, ()),
        (project, True, ("bash", "write")),
        (user, False, ("bash", "write")),
    ]:
        commands = load_commands(
            tmp_path / "p", user_dir=tmp_path / "nothing", project_trusted=trusted, skills=[entry]
        )
        got = skill_command(commands["deploy"])
        assert not isinstance(got, str), got
        assert (got.body, got.allowed_tools) == ("Ship it.", tools), (entry.source, trusted)
