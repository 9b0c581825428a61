"""No module of `src/tether` over 600 lines: past that a module holds more than one idea and a
reader cannot keep it in mind (split it along its sections)."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "tether"
MAX_LINES = 600


def test_no_module_over_the_line_limit() -> None:
    sizes = {
        p.relative_to(SRC).as_posix(): len(p.read_text().splitlines())
        for p in sorted(SRC.rglob("*.py"))
    }
    assert sizes, "no module found under src/tether"
    over = sorted(((n, path) for path, n in sizes.items() if n > MAX_LINES), reverse=True)
    listed = "\n".join(f"  {path}: {n} lines" for n, path in over)
    assert not over, f"modules over {MAX_LINES} lines:\n{listed}"
