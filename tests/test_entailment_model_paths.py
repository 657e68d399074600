"""A stacked checkpoint names the parser, detector and pair encoders it was trained with; inside a release
those names are relative to the release folder, and the checkpoint still loads from any directory."""
from models.entailment.io import beside


def test_a_relative_model_name_is_found_above_the_checkpoint(tmp_path, monkeypatch):
    release = tmp_path / "release"
    (release / "runs" / "parser" / "best").mkdir(parents=True)
    ckpt = release / "runs" / "entailment" / "stacked"
    ckpt.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)  # not the release folder
    assert beside(ckpt, "runs/parser/best") == str((release / "runs" / "parser" / "best").resolve())
    assert beside(ckpt, "org/parser-on-the-hub") == "org/parser-on-the-hub"  # left to the loader to resolve or name
    monkeypatch.chdir(release)
    assert beside(ckpt, "runs/parser/best") == "runs/parser/best"  # as given where it exists
