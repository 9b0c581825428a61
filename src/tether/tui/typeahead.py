"""The Textual driver for a terminal held since the process started (`tether.typeahead`).

Owns: `driver_class()` — None when the terminal was not held (Textual picks its own), else
`HeldDriver`, a `LinuxDriver` that (1) feeds what was typed before the hold in first, parsed as
Textual parses any input (so an Enter typed then submits like one typed now), and (2) gives the
terminal back as it was before the hold whenever the app leaves application mode (quit, the
external editor, a `!` shell command): Textual restores what it found, which is the held mode
(no echo, no line editing).
"""

from __future__ import annotations

import contextlib

from textual.driver import Driver

from tether import typeahead


def driver_class() -> type[Driver] | None:
    """The driver for `TetherApp` (None: Textual's default)."""
    if typeahead.original() is None:
        return None
    from textual._xterm_parser import XTermParser  # pyright: ignore[reportPrivateUsage]
    from textual.drivers.linux_driver import LinuxDriver

    class HeldDriver(LinuxDriver):
        def start_application_mode(self) -> None:
            early = typeahead.take_early()
            if early:  # before the input thread starts: these keys come first
                parser = XTermParser()
                events = list(parser.feed(early))
                with contextlib.suppress(Exception):  # a cut escape sequence at the end
                    events += list(parser.feed(""))
                for event in events:
                    self.process_message(event)
            super().start_application_mode()
            before = typeahead.original()
            if before is not None:
                self.attrs_before = before

    return HeldDriver
