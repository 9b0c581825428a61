"""`@path` in a prompt (`tether.agent.mentions`): one rule per test, on real files — a text file
inlined in a block naming it, the caps and their notes, binary files refused, folders listed
(`.gitignore` respected), images attached as before, paths outside the project refused unless
named absolutely, and the completion's path list."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from tether.agent.mentions import (
    mention_chip,
    mention_content,
    mention_words,
    project_paths,
    resolve_mentions,
)
from tether.errors import ConfigError
from tether.messages import ImageBlock, TextBlock


def body(block: TextBlock) -> str:
    """A block's text between its opening and closing lines."""
    return block.text.split("\n", 1)[1].rsplit("\n", 1)[0]


def test_a_text_file_goes_in_a_block_naming_its_path(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("line one\nline two\n")
    found = resolve_mentions("summarize @notes.txt.", tmp_path)
    (block,) = found.blocks
    assert block.text == '<file path="notes.txt">\nline one\nline two\n</file>'
    assert found.notes == [] and found.images == []
    content = mention_content("summarize @notes.txt.", found)
    assert content == [TextBlock(text="summarize @notes.txt."), block]


def test_words_naming_nothing_stay_text_and_the_prompt_stays_a_string(tmp_path: Path) -> None:
    text = "mail @alice or bob@example.com about @missing.py"
    found = resolve_mentions(text, tmp_path)
    assert found.blocks == [] and found.notes == [] and found.images == []
    assert mention_content(text, found) == text
    assert mention_words("a@b.c @x, @x @y)") == ["x", "y"]


def test_a_file_over_the_cap_is_cut_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 1000)
    found = resolve_mentions("@big.txt", tmp_path, per_file=100)
    (block,) = found.blocks
    assert body(block).count("x") == 100
    assert "[cut: the first 100 of 1000 characters are shown; read the file for the rest]" in block.text
    assert found.notes == ["@big.txt: 900 of 1000 characters cut"]


def test_the_total_cap_spans_the_files_and_a_file_past_it_is_left_out(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(name[0] * 60)
    found = resolve_mentions("@a.txt @b.txt @c.txt", tmp_path, per_file=100, total=100)
    assert [body(b).count(ch) for b, ch in zip(found.blocks, "ab", strict=True)] == [60, 40]
    assert len(found.blocks) == 2
    assert found.notes == [
        "@b.txt: 20 of 60 characters cut",
        "@c.txt: not attached, the prompt's files already reach the limit",
    ]


def test_a_binary_file_is_refused_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    found = resolve_mentions("@a.bin @latin.txt", tmp_path)
    assert found.blocks == []
    assert found.notes == [
        "@a.bin: a binary file (7 bytes), not attached",
        "@latin.txt: a binary file (4 bytes), not attached",
    ]


def test_a_folder_gives_its_listing_without_ignored_entries(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "main.py").write_text("")
    (src / "build.log").write_text("")
    (src / ".gitignore").write_text("*.log\n")
    (src / "node_modules").mkdir()
    found = resolve_mentions("look in @src/", tmp_path)
    (block,) = found.blocks
    assert block.text == '<folder path="src/">\n.gitignore\nmain.py\npkg/\n</folder>'
    assert mention_chip(block) == "[folder src/]"


def test_an_image_is_attached_as_before_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buf, "PNG")
    (tmp_path / "shot.png").write_bytes(buf.getvalue())
    found = resolve_mentions("what is @shot.png?", tmp_path)
    assert found.blocks == [] and len(found.images) == 1
    assert isinstance(found.images[0], ImageBlock)
    with pytest.raises(ConfigError, match=r"gone\.png: no such file"):
        resolve_mentions("and @gone.png", tmp_path)


def test_outside_the_project_is_refused_unless_named_absolutely(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    (other / "secret.txt").write_text("s3cret")
    (project / "link.txt").symlink_to(other / "secret.txt")
    found = resolve_mentions("@../other/secret.txt @link.txt", project)
    assert found.blocks == []
    assert found.notes == [
        "@../other/secret.txt: outside the project, not attached (name it by its absolute path)",
        "@link.txt: outside the project, not attached (name it by its absolute path)",
    ]
    absolute = resolve_mentions(f"@{other / 'secret.txt'}", project)
    assert "s3cret" in absolute.blocks[0].text and absolute.notes == []
    extra = resolve_mentions("@../other/secret.txt", project, extra_roots=[other])
    assert "s3cret" in extra.blocks[0].text  # an extra folder counts as inside


def test_the_chip_of_a_file_block_names_it_and_its_size(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("y" * 3000)
    (block,) = resolve_mentions("@a.txt", tmp_path).blocks
    assert mention_chip(block) == "[file a.txt 3 KB]"
    assert mention_chip(TextBlock(text="<file> not ours")) is None


def test_project_paths_respect_each_folders_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("dist/\n*.pyc\n")
    for rel in ("src/app.py", "src/app.pyc", "dist/out.js", "docs/gen/x.md", "docs/a.md", ".git/HEAD"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "docs" / ".gitignore").write_text("gen/\n")
    paths = project_paths(tmp_path)
    assert "src/app.py" in paths and "docs/a.md" in paths and "src/" in paths
    for gone in ("src/app.pyc", "dist/", "dist/out.js", "docs/gen/", "docs/gen/x.md", ".git/", ".git/HEAD"):
        assert gone not in paths


@given(st.text(alphabet=st.sampled_from("ab @.,/\n"), max_size=30))
def test_mention_words_are_the_at_words_of_the_text(text: str) -> None:
    words = mention_words(text)
    assert len(words) == len(set(words))
    for word in words:
        assert f"@{word}" in text and word and word[-1] not in ",." and " " not in word


def test_an_unreadable_file_is_a_note(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    f = tmp_path / "locked.txt"
    f.write_text("x")
    f.chmod(0)
    assert resolve_mentions("@locked.txt", tmp_path).notes == ["@locked.txt: Permission denied, not attached"]


def test_what_the_read_deny_list_refuses_is_not_attached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mention is held to the file tools' read deny list (found by a new user: `@key.pem` and
    `@.env` were sent to the provider while `read` refused them): by real path, through a
    symbolic link and a `./` too; the default rules refuse dotenv files; tether's own settings
    and credentials are never attached, even named by their absolute path."""
    from tether.agent.assembly.prompting import mention_refusal
    from tether.settings import AgentConfig

    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "credentials.json").write_text('{"keys": {"gw": "sk-SECRET"}}')
    monkeypatch.setenv("TETHER_CONFIG_DIR", str(config_dir))
    work = tmp_path / "work"
    work.mkdir()
    (work / "key.pem").write_text("PEM\n")
    (work / ".env").write_text("TOKEN=abc\n")
    (work / "alias.txt").symlink_to(work / "key.pem")
    (work / "ok.txt").write_text("fine\n")
    config = AgentConfig.model_validate({"tools": {"deny_paths": ["**/*.pem"]}})
    denied = mention_refusal(config, work)
    creds = config_dir / "credentials.json"
    found = resolve_mentions(
        f"see @key.pem @./key.pem @alias.txt @.env @ok.txt @{creds}", work, denied=denied
    )
    assert [body(b) for b in found.blocks] == ["fine"]
    assert len(found.notes) == 5
    assert all("deny list refuses it" in n for n in found.notes[:4])
    assert "(**/*.pem)" in found.notes[0]
    assert "settings and credentials are never imported" in found.notes[4]


def test_a_command_s_text_attaches_only_paths_inside_the_project(tmp_path: Path) -> None:
    """A cloned repository's command or skill whose text names `@~/.ssh/id_ed25519` or an
    absolute path sent the file (found by a new user, through ACP): words the user did not
    type attach only inside the project; the user's own absolute words still attach."""
    outside = tmp_path / "outside.txt"
    outside.write_text("private\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("notes\n")
    expanded = f"Deploy with @notes.txt and @{outside} and @~/.ssh/id_x."
    found = resolve_mentions(expanded, work, typed="/deploy now")
    assert [body(b) for b in found.blocks] == ["notes"]
    assert [n.split(":")[0] for n in found.notes] == [f"@{outside}", "@~/.ssh/id_x."[:-1]]
    mine = resolve_mentions(f"/deploy @{outside}", work, typed=f"/deploy @{outside}")
    assert [body(b) for b in mine.blocks] == ["private"]


def test_a_name_with_spaces_is_quoted_or_escaped_and_a_comma_splits_two(tmp_path: Path) -> None:
    """The third trial: `@"my file.txt"`, `@'my file.txt'` and `@my\\ file.txt` attached
    nothing and said nothing; `@notes.txt,@a.py` attached neither."""
    (tmp_path / "my file.txt").write_text("spaced\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("n\n")
    for prompt in ('read @"my file.txt" now', "read @'my file.txt', now", "read @my\\ file.txt."):
        assert mention_words(prompt) == ["my file.txt"], prompt
        got = resolve_mentions(prompt, tmp_path)
        assert [b.text for b in got.blocks] == ['<file path="my file.txt">\nspaced\n</file>']
    both = resolve_mentions("compare @notes.txt,@a.py", tmp_path)
    assert [mention_chip(b) for b in both.blocks] == ["[file notes.txt 1 byte]", "[file a.py 5 bytes]"]


@given(st.text(alphabet=st.sampled_from("ab .-_"), min_size=1, max_size=20))
def test_a_quoted_name_is_the_name(name: str) -> None:
    if not name.strip():
        return
    assert mention_words(f'see @"{name}" and') == [name.strip()]
    assert mention_words(f"see @'{name}' and") == [name.strip()]
