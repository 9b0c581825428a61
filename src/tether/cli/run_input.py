"""What goes with a `tether run` prompt: the images and `@path` words it attaches
(`prompt_attachments`), the plain text piped beside it (`piped_text`, `with_piped`), and the
check that it all fits the model's window before anything is sent (`check_input_fits`).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tether.cli.output import clean_text
from tether.cli.stdin import StdinInput, binary_why
from tether.errors import MalformedInputError
from tether.messages import ContentBlock, ImageBlock, TextBlock

if TYPE_CHECKING:
    from tether.agent.agent import Agent
    from tether.agent.mentions import Mentions


class FlagImages(NamedTuple):
    """The images read before setup: `--image`'s, in order, and the prompt's `@image` words'."""

    files: list[ImageBlock]
    mentioned: dict[str, ImageBlock]


def flag_images(prompt: str | None, files: Sequence[Path], root: Path) -> FlagImages:
    """The images of `--image FILE` and of the prompt's `@image` words, read and checked
    before any setup, once: `prompt_attachments` takes them (its `@path` text files are read
    there, once).

    Raises:
        ConfigError: an image is missing or not an image (one line naming it).
    """
    from tether.agent.attachments import read_image
    from tether.agent.mentions import mention_words
    from tether.providers.images import ATTACHABLE_TYPES

    mentioned: dict[str, ImageBlock] = {}
    for word in mention_words(prompt or ""):
        named = Path(word).expanduser()
        path = named if named.is_absolute() else root / named
        if named.suffix.lower() not in ATTACHABLE_TYPES or word in mentioned:
            continue
        if not os.path.lexists(path) or path.is_file():
            mentioned[word] = read_image(word, root=root)  # raises its one line
    return FlagImages([read_image(name, root=root) for name in files], mentioned)


def prompt_attachments(
    prompt: str | None,
    images: FlagImages,
    root: Path,
    agent: Agent | None = None,
    typed: str | None = None,
) -> Mentions:
    """What goes with the prompt: `images.files` (`--image`'s, read by `flag_images`), then what it
    names as `@path` (`tether.agent.mentions`: files inlined, folders listed, images attached,
    what `agent`'s rules refuse — `mention_refusal` — left out with a note; `typed`: what the
    user typed, when `prompt` is a command's expansion of it), paths relative to `root`.

    Raises:
        ConfigError: an image it names is missing or not an image (one line naming it).
    """
    from tether.agent.assembly.prompting import mention_refusal
    from tether.agent.mentions import Mentions, resolve_mentions

    denied = None if agent is None else mention_refusal(agent.config, root)
    found = (
        resolve_mentions(prompt, root, denied=denied, typed=typed, read=images.mentioned)
        if prompt
        else Mentions()
    )
    found.images[:0] = images.files
    return found


def check_input_fits(
    prompt: str | None, stdin: StdinInput, agent: Agent, attached: Sequence[str] = ()
) -> None:
    """Refuse new input that cannot fit the model's window before anything is sent or written
    (the rule: `tether.agent.input_fit.input_overflow`, which the TUI uses too): the prompt,
    what its `@path` words attached, the stdin messages, and the system prompt and tool
    schemas every request sends.

    Raises:
        MalformedInputError: the input is estimated above the window (exit 5); the message
            names both figures and the way out (a file the agent reads).
    """
    from tether.agent.input_fit import fixed_tokens, input_overflow

    why = input_overflow(
        prompt,
        agent.limits.context_window,
        messages=stdin.messages,  # the system prompt (stdin's too) is in `fixed`
        attached=attached,
        fixed_tokens=fixed_tokens(agent),
    )
    if why is not None:
        raise MalformedInputError(why)


def piped_text() -> str:
    """stdin's text when it is a pipe or a file (`cat log | tether run "summarize"`), else ""
    (a terminal, /dev/null, a socket).

    Raises:
        MalformedInputError: stdin is not text (`tether.cli.stdin.binary_why`).
    """
    stream = sys.stdin
    if stream is None or stream.isatty():
        return ""
    try:
        mode: int | None = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):  # not a file descriptor (a stream in this process)
        mode = None
    if mode is not None and not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
        return ""
    try:
        text = stream.read()
    except (OSError, ValueError):  # a stream that cannot be read (closed; pytest's capture)
        return ""
    if (why := binary_why(text)) is not None:
        raise MalformedInputError(f"{why}: nothing sent (attach a file as @path instead)")
    return clean_text(text)


def with_piped(content: str | list[ContentBlock], piped: str) -> str | list[ContentBlock]:
    """The prompt followed by the piped text (after the prompt's text, before its files)."""
    if isinstance(content, str):
        return f"{content}\n\n{piped}"
    block = TextBlock(text=piped)
    if content and isinstance(content[0], TextBlock):
        return [content[0], block, *content[1:]]
    return [block, *content]


def stdin_mention_note(texts: Sequence[str], root: Path) -> str | None:
    """The note for `@path` words in text piped on stdin that name something in `root`: they
    attach nothing there (only the prompt argument's do), which the user would not know.
    None when there is none."""
    from tether.agent.mentions import mention_words

    def there(word: str) -> bool:
        try:
            return (root / word).exists()
        except OSError:  # a name too long for the file system
            return False

    words = [w for t in texts for w in mention_words(t) if there(w)]
    if not words:
        return None
    named = ", ".join(f"@{w}" for w in dict.fromkeys(words))
    return (
        f"note: {named} on stdin attaches nothing: only the prompt argument's @path words "
        "attach files (tether run 'look at @FILE')"
    )
