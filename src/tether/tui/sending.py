"""Sending what the prompt editor submits (not a `/command`): a new prompt, or steering.

Owns: `send_prompt`: `//text` sends `/text`; the prompt's `@path` words and the attached images
resolved (`tether.agent.mentions`); refused and kept in the editor, with a note saying why, when
the model cannot take images, when files or images come while the agent works, or when the
text cannot fit the window (`tether.agent.input_fit`); else the user's row and a run, or, while
the agent works, `Agent.steer` and a row shown as queued until a turn boundary takes it.
Does not own: running the agent (`tether.tui.run_control`), the commands (`tether.tui.handlers`).
"""

from __future__ import annotations

from typing import Protocol

from tether.agent.assembly.prompting import mention_refusal
from tether.agent.attachments import image_refusal
from tether.agent.input_fit import fixed_tokens, input_overflow
from tether.agent.mentions import mention_chip, mention_content, resolve_mentions
from tether.errors import ConfigError
from tether.messages import ImageBlock
from tether.tui.attach import image_chip
from tether.tui.run_control import RunHost, start_run
from tether.tui.welcome import Welcome
from tether.tui.widgets import UserRow


class SendHost(RunHost, Protocol):
    """The app as sending sees it.

    Attributes:
        attached: the images waiting for the next prompt (`tether.tui.attach`).
    """

    attached: list[ImageBlock]


async def send_prompt(app: SendHost, typed: str) -> None:
    """Send `typed` (the editor's text) to the agent, or refuse it with a note."""
    text = typed.strip()[1:] if typed.strip().startswith("//") else typed
    if app.opened is None:
        app.note("no agent: fix the problem above and restart")
        return
    agent = app.agent
    try:
        denied = mention_refusal(agent.config, agent.root)  # secrets, what tools may not read
        found = resolve_mentions(text, agent.root, denied=denied)  # `@path`: files, folders, images
        images = [*app.attached, *found.images]
        refusal = image_refusal(agent.provider, len(images))
        if refusal is not None or ((images or found.blocks) and app.busy):
            raise ConfigError(refusal or "@files and images go with a new prompt: wait until it is idle")
        too_large = input_overflow(
            text,
            agent.limits.context_window,
            attached=[b.text for b in found.blocks],
            fixed_tokens=fixed_tokens(agent),
        )
        if too_large is not None:
            raise ConfigError(too_large)
    except ConfigError as exc:
        app.set_prompt(typed, keep_typed=True)
        app.note(f"not sent: {exc}")
        return
    for line in found.notes:
        app.note(line)
    await app.transcript.jump_end()
    await app.transcript.query(Welcome).remove()  # the first message: the opening panel goes
    if app.busy:
        agent.steer(text)
        row = UserRow(text, queued=True)
        app.queued.append(row)
        app.transcript.add(row)
        app.update_status()
        return
    chips = [*(mention_chip(b) or "" for b in found.blocks), *(image_chip(i) for i in images)]
    app.transcript.add(UserRow(text, images=chips))
    start_run(app, mention_content(text, found, app.attached))
    app.attached = []
