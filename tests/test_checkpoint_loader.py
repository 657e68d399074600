"""The one checkpoint loader (models/checkpoint.py): a folder or a Hub id, errors never swallowed;
and the entailment scorer's round trip, pushed by train.entailment hub=push then loaded by id,
against the local Hub server (tests/hub_server.py)."""
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from hub_server import run_hub_server, use_hub_endpoint

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "consistency_small.jsonl"


def test_a_missing_folder_is_named():
    from models.checkpoint import CheckpointNotFoundError, checkpoint_folder

    with pytest.raises(CheckpointNotFoundError, match="no/such/folder"):
        checkpoint_folder("./no/such/folder")
    with pytest.raises(CheckpointNotFoundError, match="not-an-id"):
        checkpoint_folder("not-an-id")


def test_an_unreachable_hub_id_raises_with_the_reason(tmp_path, monkeypatch):
    from huggingface_hub.utils import close_session

    from models.checkpoint import CheckpointNotFoundError, checkpoint_folder

    with run_hub_server(tmp_path) as (endpoint, _):
        use_hub_endpoint(monkeypatch, endpoint, tmp_path / "hf-cache")
        with pytest.raises(CheckpointNotFoundError, match=r"org/missing-repo.*could not be fetched"):
            checkpoint_folder("org/missing-repo")
        close_session()


def test_entailment_checkpoint_pushed_then_loaded_by_id(tmp_path, monkeypatch):
    from huggingface_hub.utils import close_session

    import models.entailment as E
    from train.entailment import train

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="train_entailment",
                      overrides=["classifier=stacked", f"data.train_file={FIXTURE}", "cv.folds=2", "hub=push",
                                 "hub.repo_id=org/qasem-entailment"])
    premise, hyps = "The council approved the budget on Tuesday .", ["When did someone approve something? Monday",
                                                                    "What did someone approve? the budget"]
    with run_hub_server(tmp_path) as (endpoint, store):
        use_hub_endpoint(monkeypatch, endpoint, tmp_path / "hf-cache")
        train(cfg, tmp_path / "run")
        assert "entailment_format.json" in store.files("org/qasem-entailment")
        remote = E.load_scorer("org/qasem-entailment")
        close_session()
    local = E.load_scorer(tmp_path / "run" / "stacked")
    assert list(remote.score(premise, hyps)) == list(local.score(premise, hyps))
