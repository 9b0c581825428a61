"""The public list is kept in one place: `PUBLIC_API` in `src/tether/__init__.py`. The type
stub beside it, `src/tether/__init__.pyi`, is generated from that dict; this test checks that
the stub on disk is exactly what the dict gives.

After changing `PUBLIC_API`, rewrite the stub with:

    PYTHONPATH=src python tests/architecture/test_public_api.py
"""

from __future__ import annotations

import sys
from pathlib import Path

STUB = Path(__file__).resolve().parents[2] / "src" / "tether" / "__init__.pyi"

HEADER = '''"""Type stub of `tether`, generated from `PUBLIC_API` in `__init__.py` (do not edit: run
`PYTHONPATH=src python tests/architecture/test_public_api.py`)."""
'''


def _kind(name: str) -> int:
    """isort's order by type: CONSTANTS, then Classes, then functions."""
    if name.isupper() and len(name) > 1:
        return 0
    return 1 if name[:1].isupper() else 2


def stub_text(api: dict[str, str], version_line: str = "__version__: str") -> str:
    """The stub for `api` (name → module): one re-export per name, then `__all__`."""
    imports = sorted(api.items(), key=lambda item: (item[1], _kind(item[0]), item[0]))
    lines = [HEADER]
    lines += [f"from {module} import {name} as {name}" for name, module in imports]
    lines += ["", version_line, "PUBLIC_API: dict[str, str]", "", "__all__ = ["]
    lines += [f'    "{name}",' for name in sorted(api, key=lambda n: (_kind(n), n))]
    lines += ["]", ""]
    return "\n".join(lines)


def test_the_stub_is_generated_from_the_public_list() -> None:
    import tether

    assert STUB.read_text() == stub_text(tether.PUBLIC_API), (
        "src/tether/__init__.pyi is not what PUBLIC_API gives: run "
        "`PYTHONPATH=src python tests/architecture/test_public_api.py`"
    )


def test_the_stub_lists_every_public_name_and_nothing_else() -> None:
    import tether

    text = STUB.read_text()
    for name, module in tether.PUBLIC_API.items():
        assert f"from {module} import {name} as {name}\n" in text, name
    assert text.count(" as ") == len(tether.PUBLIC_API)


if __name__ == "__main__":
    import tether

    STUB.write_text(stub_text(tether.PUBLIC_API))
    sys.stdout.write(f"wrote {STUB}\n")
