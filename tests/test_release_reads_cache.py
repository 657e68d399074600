"""What a release stage reads (release/inputs.py) is kept by content between runs (.inputs/reads.json): the answers
with the cache are the ones without it, a kept answer is reused without parsing or composing again, and an edited
module or config file is read again."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import ROOT
from release.imports import PACKAGES

STAGE = ("train.parser", ["+experiment=span_tiny", "hydra.run.dir=runs/parser"])


@pytest.fixture
def repo(tmp_path) -> Path:
    """A copy of the repo's code and configs, to edit."""
    out = tmp_path / "repo"
    for part in (*PACKAGES, "conf"):
        shutil.copytree(ROOT / part, out / part, ignore=shutil.ignore_patterns("__pycache__"))
    return out


def test_the_graph_with_the_cache_is_the_graph_without_it_and_a_kept_file_is_not_parsed(monkeypatch):
    import ast

    from release.imports import module_graph

    cache: dict = {}
    for lazy in (False, True):
        assert module_graph(ROOT, lazy=lazy, cache=cache) == module_graph(ROOT, lazy=lazy)
    monkeypatch.setattr(ast, "parse", lambda *a, **k: pytest.fail("a kept file was parsed again"))
    assert module_graph(ROOT, lazy=True, cache=cache)


def test_kept_answers_are_the_same_and_an_edit_is_read_again(repo, tmp_path, monkeypatch):
    from release.inputs import StageInputs

    cache = tmp_path / "reads.json"
    plain = StageInputs(repo).files(*STAGE)
    first = StageInputs(repo, cache=cache)
    assert first.files(*STAGE) == plain
    first.save()

    def no_compose(self, *a):
        raise AssertionError("composed again although nothing changed")

    with monkeypatch.context() as m:
        m.setattr(StageInputs, "configs", no_compose)
        kept = StageInputs(repo, cache=cache)
        assert kept.files(*STAGE) == plain and kept.graph == first.graph
        kept.save()
    # an edited module: its new import is read; an edited config: composed again
    (repo / "train" / "parser" / "run.py").write_text((repo / "train" / "parser" / "run.py").read_text()
                                                      + "\nimport metrics.contradiction  # noqa\n")
    (repo / "conf" / "model" / "span_tiny.yaml").write_text((repo / "conf" / "model" / "span_tiny.yaml").read_text()
                                                            + "# edited\n")
    composed = []
    real = StageInputs.configs
    monkeypatch.setattr(StageInputs, "configs", lambda self, *a: composed.append(a) or real(self, *a))
    edited = StageInputs(repo, cache=cache)
    assert "metrics.contradiction" in edited.graph["train.parser.run"]
    assert edited.files(*STAGE) == StageInputs(repo).files(*STAGE) and composed
