"""`@path` in a prompt: the files, folders and images it names, resolved once for every host
(`tether run`, the TUI, ACP).

Owns: `resolve_mentions` (a prompt's `@path` words → the blocks that go with it: a text file's
content in a `<file path="...">` block, capped per file and in total with a note of what was
cut; a folder's listing in a `<folder path="...">` block; an image as an image block, as
`tether.agent.attachments` reads it; a binary file or a path outside the project refused with
a note), `mention_content` (the prompt as `Agent.run` takes it) and `project_paths` (the
project's files and folders, `.gitignore` respected: what `@` completes from), `mention_chip`
(a transcript's label for an inlined block).
Does not own: reading images (`tether.agent.attachments`), the hosts' completion lists.

The rules, in order, for each `@word` (trailing punctuation is not part of it; an e-mail
address is not a mention; a name with spaces is quoted, `@"my file.txt"` or `@'my file.txt'`,
or escaped, `@my\\ file.txt`; `@a.py,@b.py` names both):
- a word naming nothing (`@alice`) is left as text, except an image suffix, which is an error
  as it was before (`@shot.png` that is missing: nothing is sent);
- a relative path resolving outside the project (and the extra folders), through `..` or a
  symbolic link, is refused with a note; an absolute path (`/x`, `~/x`) is taken as named;
- in a command's or skill's text (a word the user did not type: `typed`), an absolute path
  (`/x`, `~/x`) is refused with a note: a cloned repository's command never names a file
  outside the project for the user;
- a path `denied` refuses (`tether.agent.assembly.prompting.mention_refusal`: tether's own
  settings and credentials, what the file tools' read deny list refuses — `tools.deny_paths`,
  dotenv files by default), judged by its real path, is refused with a note saying why: what
  the tools may not read is not sent by a mention either;
- an image (by suffix) is attached as an image;
- a folder gives its listing (one level, `.gitignore` respected, at most `MAX_LISTING` entries);
- a file whose first 8 KB hold a NUL byte, or that is not UTF-8, is refused with a note;
- a text file's content is inlined, cut at `per_file` characters and at what is left of
  `total`, with a note inside the block and in `notes`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tether.agent.attachments import read_image
from tether.gitignore import IgnoreRules, read_gitignore
from tether.messages import ContentBlock, ImageBlock, TextBlock
from tether.plural import counted
from tether.providers.images import ATTACHABLE_TYPES

__all__ = [
    "MAX_FILE_CHARS",
    "MAX_LISTING",
    "MAX_TOTAL_CHARS",
    "Mentions",
    "mention_chip",
    "mention_content",
    "mention_words",
    "project_paths",
    "resolve_mentions",
]

MAX_FILE_CHARS = 50_000
"""The most characters of one file inlined (about 12k tokens)."""
MAX_TOTAL_CHARS = 200_000
"""The most characters inlined for one prompt, all files together."""
MAX_LISTING = 200
"""The most entries of a folder's listing."""

_MENTION = re.compile(
    r"""(?<![\w@])@(?:"([^"\n]+)"|'([^'\n]+)'|((?:\\ |[^\s,]|,(?!@))+))"""
)
"""`@word`, `@"a name with spaces"`, `@'…'` or `@a\\ name` (Gemini CLI's escape); a bare word
ends at a space or at `,@` (`@a.py,@b.py` names two)."""
_TRAILING = ",;:!?)]}'\""
_SNIFF = 8192
_ALWAYS_SKIPPED = frozenset({".git", "node_modules", "__pycache__"})


@dataclass(slots=True)
class Mentions:
    """What a prompt's `@path` words resolved to.

    Attributes:
        blocks: the `<file>` and `<folder>` text blocks, in the prompt's order.
        images: the images it names, in order.
        notes: one line per refusal or cut (shown to the user; the model sees the cut note in
            the block itself).
    """

    blocks: list[TextBlock] = field(default_factory=list[TextBlock])
    images: list[ImageBlock] = field(default_factory=list[ImageBlock])
    notes: list[str] = field(default_factory=list[str])


def mention_words(text: str) -> list[str]:
    """The `@word`s of `text` in order, each once, trailing punctuation (and a final `.`)
    stripped, a quoted name (`@"my file.txt"`) as quoted; an e-mail address's `@` is not
    one."""
    out: list[str] = []
    for match in _MENTION.finditer(text):
        quoted = match.group(1) or match.group(2)
        if quoted is not None:
            word = quoted.strip()
        else:
            word = match.group(3).rstrip(_TRAILING + ".").replace("\\ ", " ")
        if word and word not in out:
            out.append(word)
    return out


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def resolve_mentions(
    text: str,
    root: Path,
    *,
    extra_roots: Sequence[Path] = (),
    per_file: int = MAX_FILE_CHARS,
    total: int = MAX_TOTAL_CHARS,
    denied: Callable[[str], str | None] | None = None,
    typed: str | None = None,
    read: Mapping[str, ImageBlock] | None = None,
) -> Mentions:
    """Resolve the `@path` words of `text` against `root` (the module docstring's rules);
    `denied` tells why a real path may not be attached, or None; `typed` is what the user
    typed when `text` is a command's expansion of it (its words are the user's; the others the
    command's); `read`: images already read, by their word (each file is read once).

    Raises:
        ConfigError: an image it names is missing or unreadable (one line naming it).
    """
    out = Mentions()
    roots = [r.resolve() for r in (root, *extra_roots)]
    left = total
    own = None if typed is None else set(mention_words(typed))
    for word in mention_words(text):
        named = Path(word).expanduser()
        absolute = named.is_absolute()
        if absolute and own is not None and word not in own:
            out.notes.append(f"@{word}: a command's text attaches only paths inside the project")
            continue
        path = named if absolute else root / named
        is_image = named.suffix.lower() in ATTACHABLE_TYPES
        if not os.path.lexists(path):
            if is_image:
                out.images.append(read_image(word, root=root))  # raises: no such file
            continue
        real = path.resolve()
        if not absolute and not _inside(real, roots):
            out.notes.append(f"@{word}: outside the project, not attached (name it by its absolute path)")
            continue
        if denied is not None and (why := denied(str(real))) is not None:
            out.notes.append(f"@{word}: {why}, not attached")
            continue
        if is_image and real.is_file():
            known = None if read is None else read.get(word)
            out.images.append(known if known is not None else read_image(word, root=root))
        elif real.is_dir():
            out.blocks.append(_folder_block(word, real))
        elif real.is_file():
            left -= _file_block(word, real, out, min(per_file, left))
        else:
            out.notes.append(f"@{word}: not a file or folder, not attached")
    return out


def _file_block(word: str, path: Path, out: Mentions, cap: int) -> int:
    """Inline the text file `path` (at most `cap` characters) into `out`; the characters used."""
    try:
        with path.open("rb") as f:
            head = f.read(_SNIFF)
            data = head + f.read()
    except OSError as exc:
        out.notes.append(f"@{word}: {exc.strerror or exc}, not attached")
        return 0
    try:
        if b"\0" in head:
            raise UnicodeDecodeError("utf-8", head, 0, 1, "NUL byte")
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        out.notes.append(f"@{word}: a binary file ({len(data)} bytes), not attached")
        return 0
    if cap <= 0:
        out.notes.append(f"@{word}: not attached, the prompt's files already reach the limit")
        return 0
    body = content[:cap]
    if len(content) > cap:
        cut = (
            f"[cut: the first {cap} of {len(content)} characters are shown; "
            f"read the file for the rest]"
        )
        body = body.rstrip("\n") + "\n" + cut
        out.notes.append(f"@{word}: {len(content) - cap} of {len(content)} characters cut")
    out.blocks.append(TextBlock(text=f'<file path="{word}">\n{body.rstrip(chr(10))}\n</file>'))
    return min(len(content), cap)


def _folder_block(word: str, path: Path) -> TextBlock:
    rules = IgnoreRules().enter("", read_gitignore(path))
    names: list[str] = []
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        return TextBlock(text=f'<folder path="{word}">\n[cannot list: {exc.strerror or exc}]\n</folder>')
    for entry in entries:
        if entry.name in _ALWAYS_SKIPPED:
            continue
        is_dir = entry.is_dir()
        shown = entry.name + ("/" if is_dir else "")
        if rules.ignored(entry.name, is_dir=is_dir):
            continue
        names.append(shown)
    more = len(names) - MAX_LISTING
    lines = names[:MAX_LISTING] + ([f"[... and {more} more]"] if more > 0 else [])
    return TextBlock(text=f'<folder path="{word}">\n' + "\n".join(lines) + "\n</folder>")


_BLOCK = re.compile(r'\A<(file|folder) path="([^"\n]*)">\n')


def mention_chip(block: TextBlock) -> str | None:
    """`[file notes.txt 2 KB]` (`[file notes.txt 12 bytes]` under 1 KB) / `[folder src/]` for
    a block `resolve_mentions` made, None for any other text."""
    match = _BLOCK.match(block.text)
    if match is None:
        return None
    kind, path = match.groups()
    if kind == "folder":
        return f"[folder {path.rstrip('/')}/]"
    size = len(block.text.encode("utf-8")) - match.end() - len("\n</file>")
    shown = counted(size, "byte") if size < 1024 else f"{round(size / 1024)} KB"
    return f"[file {path} {shown}]"


def mention_content(
    text: str, mentions: Mentions, attached: Sequence[ImageBlock] = ()
) -> str | list[ContentBlock]:
    """The prompt as `Agent.run` takes it: the text alone when it names nothing, else a text
    block (when there is text), the `<file>` / `<folder>` blocks, then the images (`attached`
    first)."""
    images = [*attached, *mentions.images]
    if not images and not mentions.blocks:
        return text
    blocks: list[ContentBlock] = [TextBlock(text=text)] if text.strip() else []
    blocks.extend(mentions.blocks)
    blocks.extend(images)
    return blocks


def project_paths(root: Path, cap: int = 20_000) -> list[str]:
    """The files and folders below `root` as relative paths (folders end in `/`), each
    folder's `.gitignore` and `.git/info/exclude` respected (`tether.gitignore`; and `.git`, `node_modules`, `__pycache__` skipped), about
    `cap` at most: what `@` completes from."""
    out: list[str] = []
    below: dict[str, IgnoreRules] = {"": IgnoreRules.at(root)}
    for folder, dirs, names in os.walk(root):
        rel = Path(folder).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        rules = below.pop(prefix)
        if prefix:
            rules = rules.enter(prefix, read_gitignore(Path(folder)))
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _ALWAYS_SKIPPED and not rules.ignored(prefix + d, is_dir=True)
        )
        below.update((f"{prefix}{d}/", rules) for d in dirs)
        out += [f"{prefix}{d}/" for d in dirs]
        out += [prefix + n for n in sorted(names) if not rules.ignored(prefix + n, is_dir=False)]
        if len(out) > cap:
            break
    return out
