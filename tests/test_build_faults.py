"""data_prep.build on corrupt releases: every read error names the file (and line), a
truncated file fails the build, a failed build leaves the processed files as they were, skip
reasons are named right and their file:line examples land in stats.json. Also the missing-data
stop of train.parser."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from parser_helpers import compose_cfg

ROOT = Path(__file__).resolve().parents[1]


def _bank_lines(data_dir: Path, split: str, n: int) -> list[str]:
    with gzip.open(data_dir / "qasrl-bank-v2" / "orig" / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [next(f) for _ in range(n)]


@pytest.fixture()
def small_bank(data_dir, tmp_path):
    """A data dir holding the first 60 / 40 sentences of Bank dev / test; returns (dir, dev path, dev lines)."""
    orig = tmp_path / "data" / "qasrl-bank-v2" / "orig"
    orig.mkdir(parents=True)
    dev = _bank_lines(data_dir, "dev", 60)
    with gzip.open(orig / "dev.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(dev)
    with gzip.open(orig / "test.jsonl.gz", "wt", encoding="utf-8") as f:
        f.writelines(_bank_lines(data_dir, "test", 40))
    return tmp_path / "data", orig / "dev.jsonl.gz", dev


def _build(data, out, sources=("qasrl-bank",)):
    from data_prep.build import build

    return build(data, out, sources)


def test_a_gzip_cut_mid_line_and_recompressed_fails_naming_file_and_line(small_bank, tmp_path):
    from data_prep.records import DataFormatError

    data, dev, lines = small_bank
    with gzip.open(dev, "wt", encoding="utf-8") as f:  # 30 whole lines, then half of line 31, no newline
        f.writelines(lines[:30])
        f.write(lines[30][: len(lines[30]) // 2])
    with pytest.raises(DataFormatError, match=rf"{dev}:31: the file ends in the middle of a record: it is truncated"):
        _build(data, tmp_path / "out")


def test_a_gzip_cut_in_half_fails_naming_the_file(small_bank, tmp_path):
    from data_prep.records import DataFormatError

    data, dev, _ = small_bank
    raw = dev.read_bytes()
    dev.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(DataFormatError, match=rf"{dev}: the gzip stream ends early, after line \d+: the file is truncated"):
        _build(data, tmp_path / "out")


def test_a_file_that_is_not_gzip_fails_naming_the_file(small_bank, tmp_path):
    from data_prep.records import DataFormatError

    data, dev, lines = small_bank
    dev.write_text("".join(lines))  # plain text under a .gz name
    with pytest.raises(DataFormatError, match=rf"{dev}: not a valid gzip file"):
        _build(data, tmp_path / "out")


def test_invalid_utf8_fails_naming_file_and_line(small_bank, data_dir, tmp_path):
    from data_prep.records import DataFormatError

    data, dev, lines = small_bank
    with gzip.open(dev, "wb") as f:
        f.write("".join(lines[:5]).encode() + b'{"sentenceId": "x\xff\xfe"}\n')
    with pytest.raises(DataFormatError, match=rf"{dev}: not valid UTF-8 at or after line \d+"):
        _build(data, tmp_path / "out")
    # the CSV releases too
    gs = tmp_path / "gs"
    (gs / "qasrl-gs").mkdir(parents=True)
    for sub in ("gold", "sentences"):
        (gs / "qasrl-gs" / sub).symlink_to(data_dir / "qasrl-gs" / sub)
    bad = gs / "qanom" / "annot.train.csv"
    bad.parent.mkdir()
    bad.write_bytes((data_dir / "qanom" / "annot.train.csv").read_bytes()[:5000] + b"\xff\xfe,broken\n")
    with pytest.raises(DataFormatError, match=rf"{bad}: not valid UTF-8 at or after line \d+"):
        _build(gs, tmp_path / "out", ("qanom",))


def test_a_failed_build_leaves_the_processed_files_as_they_were(small_bank, tmp_path):
    from data_prep.records import DataFormatError

    data, dev, lines = small_bank
    out = tmp_path / "out"
    _build(data, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert {"qasrl-bank.dev.jsonl", "qasrl-bank.test.jsonl", "stats.json"} <= set(before)
    with gzip.open(dev, "wt", encoding="utf-8") as f:  # dev grows, then the file is cut
        f.writelines(lines + lines[:10])
        f.write(lines[10][:50])
    with pytest.raises(DataFormatError):
        _build(data, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert not list(tmp_path.glob(".out.building-*")), "the staging folder was left behind"


def test_the_cli_fails_with_the_message_and_no_traceback(small_bank, tmp_path):
    data, dev, _ = small_bank
    dev.write_bytes(dev.read_bytes()[:300])
    out = subprocess.run([sys.executable, "-m", "data_prep.build", f"paths.data_dir={data}",
                          f"paths.processed_dir={tmp_path / 'out'}", "sources=[qasrl-bank]",
                          f"hydra.run.dir={tmp_path / 'h'}"], cwd=ROOT, capture_output=True, text=True)
    said = out.stdout + out.stderr
    assert out.returncode == 1 and "build failed" in said and str(dev) in said and "Traceback" not in said


def test_skip_reasons_are_named_and_their_examples_go_into_stats(data_dir, tmp_path):
    """In a GS gold file, "5:3" (end before start) and "-1:2" get their own reasons, not
    span_outside_sentence; stats.json lists the file:line of each."""
    import csv

    gs = tmp_path / "data" / "qasrl-gs"
    (gs / "gold").mkdir(parents=True)
    (gs / "sentences").symlink_to(data_dir / "qasrl-gs" / "sentences")
    for f in (data_dir / "qasrl-gs" / "gold").iterdir():
        (gs / "gold" / f.name).symlink_to(f)
    gold = gs / "gold" / "wikinews.dev.gold.csv"
    gold.unlink()
    rows = list(csv.DictReader((data_dir / "qasrl-gs" / "gold" / "wikinews.dev.gold.csv").open(encoding="utf-8", newline="")))
    rows[0]["answer_range"], rows[0]["answer"] = "5:3", ""
    rows[1]["answer_range"], rows[1]["answer"] = "-1:2", ""
    with gold.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    _build(tmp_path / "data", tmp_path / "out", ("qasrl-gs",))
    dev = json.loads((tmp_path / "out" / "stats.json").read_text())["qasrl-gs"]["dev"]
    assert dev["skipped"]["span_end_not_after_start"] == 1 and dev["skipped"]["negative_span_start"] == 1
    assert dev["skip_examples"]["span_end_not_after_start"][0].startswith(f"{gold}:2 ([5, 3) in ")
    assert dev["skip_examples"]["negative_span_start"][0].startswith(f"{gold}:3 ")


def test_training_on_a_missing_release_stops_before_any_model_loads(data_dir, tmp_path, monkeypatch):
    """data=joint_release needs Bank train, which the offline copy lacks: the error names the
    raw file and the download command, and nothing is built or loaded."""
    import train.parser.span as span_trainer
    from train.parser import train

    def no_model(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(span_trainer, "build_model", no_model)
    cfg = compose_cfg("train_parser", ["data=joint_release", f"paths.data_dir={data_dir}",
                                       f"paths.processed_dir={tmp_path / 'processed'}", f"run_dir={tmp_path / 'run'}"])
    with pytest.raises(FileNotFoundError) as err:
        train(cfg)
    msg = str(err.value)
    assert "qasrl-bank.train.jsonl" in msg and str(data_dir / "qasrl-bank-v2" / "orig" / "train.jsonl.gz") in msg
    assert f"python -m data_prep.download paths.data_dir={data_dir}" in msg
    assert not (tmp_path / "processed").exists() and not (tmp_path / "run" / "checkpoints").exists()
