"""The unknown-window note names the model where settings.json takes it (trial5: it printed the
placeholder `"<model>"`), so the line can be pasted."""

from __future__ import annotations

import json

from tether.providers.catalog import unknown_window_warning


def test_the_unknown_window_note_names_the_model_in_the_settings_line() -> None:
    note = unknown_window_warning("down")
    assert '{"context": {"windows": {"down": {"context_window": N' in note
    assert "<model>" not in note
    assert json.dumps('m"x') in unknown_window_warning('m"x')
