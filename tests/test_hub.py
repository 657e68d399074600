"""common/hub.py against a real (local) Hub-speaking HTTP server: tests/hub_server.py.

The server runs on 127.0.0.1 in a thread; huggingface_hub is pointed at it (HF_ENDPOINT, its
import-time constants, HF_TOKEN=dummy, no Xet, offline mode off) for the duration of each test.
"""
from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
import yaml

from hub_server import run_hub_server, use_hub_endpoint

REPO = "user/qasem-parser-tiny"
RESULTS = [
    {"task_type": "text2text-generation", "dataset_type": "qasrl", "dataset_name": "QA-SRL GS + QANom dev",
     "dataset_split": "dev", "metric_type": "ua_f1", "metric_name": "UA F1", "value": 0.612345},
    {"task_type": "text2text-generation", "dataset_type": "qasrl", "dataset_name": "QA-SRL GS + QANom dev",
     "dataset_split": "dev", "metric_type": "la_f1", "metric_name": "LA F1", "value": 0.5},
]
COMMAND = "python -m train.parser model=t5_small trainer.args.num_train_epochs=3 seed=7"


def folder_state(folder: Path) -> dict[str, tuple[bytes, int]]:
    """{relative path: (bytes, mtime_ns)} of every file under `folder` (hidden ones included)."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def front_matter(readme: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", readme, re.DOTALL)
    assert match, f"README.md has no YAML front matter:\n{readme[:300]}"
    return yaml.safe_load(match.group(1))


@pytest.fixture(scope="module")
def tiny_model():
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(vocab_size=100, d_model=8, d_ff=16, d_kv=4, num_layers=1, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    return T5ForConditionalGeneration(config).eval()


@pytest.fixture()
def checkpoint(tmp_path, tiny_model) -> Path:
    """A saved tiny T5 with the files a parser checkpoint carries."""
    from models.parser.qa_format import get_format, save_format

    folder = tmp_path / "best"
    tiny_model.save_pretrained(folder)
    save_format(get_format("qasem_parser"), folder / "qa_format.json")
    assert {"config.json", "generation_config.json", "model.safetensors"} <= {p.name for p in folder.iterdir()}
    return folder


def write_card(folder: Path, results=RESULTS) -> Path:
    from common.hub import write_model_card

    return write_model_card(folder, model_name="qasem-parser-tiny", description="A tiny QASem parser for tests.",
                            results=results, datasets=["biu-nlp/qa_srl2018", "biu-nlp/qanom"], command=COMMAND,
                            base_model="t5-small", tags=["qasrl", "qasem"])


def check_card(readme: str, *, model_name: str, results: list[dict], command: str) -> dict:
    meta = front_matter(readme)
    (index,) = meta["model-index"]
    assert index["name"] == model_name
    got = [(r["task"]["type"], r["dataset"]["type"], r["dataset"]["name"], r["dataset"].get("split"),
            m["type"], m.get("name"), m["value"]) for r in index["results"] for m in r["metrics"]]
    want = [(r["task_type"], r["dataset_type"], r["dataset_name"], r["dataset_split"], r["metric_type"],
             r["metric_name"], round(r["value"], 4)) for r in results]
    assert sorted(got) == sorted(want)
    assert f"```\n{command}\n```" in readme
    return meta


def test_push_folder_uploads_every_file_byte_identical_with_the_model_card(hub, checkpoint):
    from huggingface_hub import HfApi

    from common.hub import push_folder

    endpoint, store = hub
    card = write_card(checkpoint)
    before = folder_state(checkpoint)

    url = push_folder(checkpoint, REPO, commit_message="QASem parser, dev UA F1 0.612")

    head = store.commits(REPO)[-1]
    assert url == f"{endpoint}/{REPO}/commit/{head.oid}"
    assert head.summary == "QASem parser, dev UA F1 0.612"
    assert store.repo(REPO).private
    remote = store.files(REPO)
    assert set(remote) == set(before) | {".gitattributes"}
    for rel, (content, _) in before.items():
        assert remote[rel] == content, f"{rel} differs on the server"
    # the weights went through the LFS batch API + upload, the small JSON files inline in the commit
    assert store.lfs_paths(REPO) == {"model.safetensors"}
    assert store.requested("POST", rf"^/{REPO}\.git/info/lfs/objects/batch$")
    assert store.requested("PUT", r"^/lfs-upload/")
    assert store.requested("POST", r"^/api/validate-yaml$")
    assert folder_state(checkpoint) == before, "push changed the local folder"
    # the server's mirror of main is the local folder
    mirror = store.mirror_path(REPO)
    assert {p: (mirror / p).read_bytes() for p in before} == {p: c for p, (c, _) in before.items()}

    meta = check_card(remote["README.md"].decode(), model_name="qasem-parser-tiny", results=RESULTS, command=COMMAND)
    assert card.read_bytes() == remote["README.md"]
    assert meta["base_model"] == "t5-small" and meta["license"] == "mit" and meta["language"] == "en"
    assert meta["datasets"] == ["biu-nlp/qa_srl2018", "biu-nlp/qanom"]
    assert set(meta["tags"]) >= {"qasrl", "qasem"}
    assert "| QA-SRL GS + QANom dev | dev | UA F1 | 61.2 |" in remote["README.md"].decode()

    # what the Hub API says about it
    api = HfApi(endpoint=endpoint)
    assert sorted(api.list_repo_files(REPO)) == sorted(remote)
    info = api.model_info(REPO)
    assert info.sha == head.oid and info.private
    assert {(e.metric_type, e.metric_value) for e in info.card_data.eval_results} == {("ua_f1", 0.6123), ("la_f1", 0.5)}

    # pushing the same folder again is a no-op (the preupload oids match); a changed card is one new commit
    n = len(store.commits(REPO))
    assert push_folder(checkpoint, REPO) == url
    assert len(store.commits(REPO)) == n
    new_results = [dict(r, value=r["value"] + 0.1) for r in RESULTS]
    write_card(checkpoint, new_results)
    url2 = push_folder(checkpoint, REPO, commit_message="Update card")
    assert url2 != url and len(store.commits(REPO)) == n + 1
    remote2 = store.files(REPO)
    assert {p for p in remote2 if remote2[p] != remote[p]} == {"README.md"}
    check_card(remote2["README.md"].decode(), model_name="qasem-parser-tiny", results=new_results, command=COMMAND)


def test_pushed_checkpoint_downloads_and_loads(hub, checkpoint, tiny_model, tmp_path):
    import torch
    from huggingface_hub import ModelCard, hf_hub_download, snapshot_download
    from transformers import GenerationConfig, T5ForConditionalGeneration

    from models.checkpoint import checkpoint_folder
    from models.parser import FORMAT_FILE
    from models.parser.qa_format import get_format, load_format
    from common.hub import push_folder

    endpoint, store = hub
    write_card(checkpoint)
    assert push_folder(checkpoint, REPO) is not None
    head = store.commits(REPO)[-1].oid

    local = Path(snapshot_download(REPO, cache_dir=tmp_path / "dl-cache"))
    assert local.name == head  # snapshots/<commit id>
    for p in sorted(checkpoint.iterdir()):
        assert (local / p.name).read_bytes() == p.read_bytes(), p.name
    one = Path(hf_hub_download(REPO, "config.json", cache_dir=tmp_path / "dl-cache2", endpoint=endpoint))
    assert one.read_bytes() == (checkpoint / "config.json").read_bytes()
    assert store.requested("HEAD", rf"^/{REPO}/resolve/main/config\.json$")

    model = T5ForConditionalGeneration.from_pretrained(local).eval()
    want = tiny_model.state_dict()
    got = model.state_dict()
    assert set(got) == set(want)
    assert all(torch.equal(got[k], want[k]) for k in want)
    ids = torch.tensor([[5, 6, 7, 1]])
    with torch.no_grad():
        assert torch.equal(model.generate(ids, max_new_tokens=4, do_sample=False),
                           tiny_model.generate(ids, max_new_tokens=4, do_sample=False))
    assert GenerationConfig.from_pretrained(local).to_dict() == tiny_model.generation_config.to_dict()
    assert load_format(local / FORMAT_FILE) == get_format("qasem_parser")
    # the one loader's repo id path (snapshot_download with the default endpoint)
    assert (checkpoint_folder(REPO) / FORMAT_FILE).read_text() == (checkpoint / FORMAT_FILE).read_text()
    assert ModelCard.load(REPO).data.eval_results[0].metric_value == 0.6123


@pytest.mark.parametrize("failure", ["commit_500", "server_down", "bad_token"])
def test_failed_push_returns_none_logs_and_keeps_the_folder(failure, tmp_path, monkeypatch, checkpoint, caplog):
    from huggingface_hub.utils import close_session

    from common.hub import push_folder

    write_card(checkpoint)
    before = folder_state(checkpoint)
    caplog.set_level(logging.ERROR, logger="common.hub")
    if failure == "server_down":
        with run_hub_server() as (endpoint, _):
            pass  # the port is closed again
        use_hub_endpoint(monkeypatch, endpoint, tmp_path / "hf-cache")
        assert push_folder(checkpoint, REPO) is None
        reason = "ConnectError"
    else:
        token = "the-real-token" if failure == "bad_token" else None
        with run_hub_server(tmp_path, fail_commits=failure == "commit_500", token=token) as (endpoint, store):
            use_hub_endpoint(monkeypatch, endpoint, tmp_path / "hf-cache")
            assert push_folder(checkpoint, REPO) is None
            close_session()
        assert not store.unhandled
        if failure == "commit_500":
            reason = "500"
            assert store.requested("POST", rf"^/api/models/{REPO}/commit/main$")  # it got that far
            assert [c.summary for c in store.commits(REPO)] == ["initial commit"]  # and nothing was committed
        else:
            reason = "401"
            assert not store.repos
    (record,) = [r for r in caplog.records if r.name == "common.hub" and r.levelno == logging.ERROR]
    message = record.getMessage()
    assert "failed" in message and REPO in message and str(checkpoint) in message and reason in message
    assert folder_state(checkpoint) == before


def test_push_of_a_missing_folder_raises(tmp_path):
    from common.hub import push_folder

    with pytest.raises(FileNotFoundError):
        push_folder(tmp_path / "nope", REPO)


def test_parser_publish_pushes_the_card_of_the_run(hub, checkpoint):
    from parser_helpers import compose_cfg

    from train.parser import publish

    endpoint, store = hub
    repo_id = "user/qasem-parser-run"
    cfg = compose_cfg("train_parser", ["model=t5_small", "hub=push", f"hub.repo_id={repo_id}"])
    dev = {"ua": {"f1": 0.71234, "precision": 0.7, "recall": 0.72}, "la": {"f1": 0.55555}}
    url = publish(cfg, checkpoint, dev)

    head = store.commits(repo_id)[-1]
    assert url == f"{endpoint}/{repo_id}/commit/{head.oid}"
    assert head.summary == "QASem parser, dev UA F1 0.712"
    remote = store.files(repo_id)
    assert all(remote[p.name] == p.read_bytes() for p in checkpoint.iterdir())
    readme = remote["README.md"].decode()
    results = [{"task_type": "text2text-generation", "dataset_type": "qasrl", "dataset_name": "QA-SRL GS + QANom dev",
                "dataset_split": "dev", "metric_type": f"{k}_f1", "metric_name": f"{k.upper()} F1",
                "value": dev[k]["f1"]} for k in ("ua", "la")]
    meta = check_card(readme, model_name="qasem-parser-run", results=results, command="python -m train.parser ")
    assert meta["base_model"] == "t5-small"
    assert set(meta["tags"]) >= {"qasrl", "qanom", "qasem"}
    assert "qa_format.json" in readme


def test_evaluation_adds_its_test_figures_to_the_pushed_card(hub, tmp_path):
    """The runbook's last step: evaluation.parser hub=push adds the test UA / LA F1 to the card
    train.parser pushed (dev results kept), with metrics.json, in one commit."""
    import json

    from parser_helpers import compose_cfg
    from evaluation.parser import evaluate
    from train.parser import train

    endpoint, store = hub
    repo_id = "user/qasem-parser-e2e"
    run = tmp_path / "run"
    train(compose_cfg("train_parser", ["+experiment=tiny", f"run_dir={run}", "hub=push", f"hub.repo_id={repo_id}"]))
    assert "dev" in store.files(repo_id)["README.md"].decode()
    cfg = compose_cfg("eval_parser", [f"checkpoint={repo_id}", "split=dev", "paths.data_dir=data/raw",
                                      "paths.processed_dir=/nonexistent", "hub=push", f"hub.repo_id={repo_id}",
                                      "+hub.token=hf_SECRETTOKEN123"])
    results = evaluate(cfg, tmp_path / "eval")
    head = store.commits(repo_id)[-1]
    assert results["hub_url"] == f"{endpoint}/{repo_id}/commit/{head.oid}" and head.summary == "dev results (qanom protocol)"
    remote = store.files(repo_id)
    assert json.loads(remote["dev_metrics.qanom.json"])["sample"]["ua"]["f1"] == results["sample"]["ua"]["f1"]
    meta = front_matter(remote["README.md"].decode())
    metrics = {(r["dataset"]["name"], m["type"]) for r in meta["model-index"][0]["results"] for m in r["metrics"]}
    assert {("QA-SRL GS + QANom dev", "ua_f1"), ("shipped sample", "ua_f1_qanom"), ("shipped sample", "la_f1_qanom")} <= metrics
    assert b"hf_SECRETTOKEN123" not in b"".join(remote.values())
    assert "hf_SECRETTOKEN123" not in remote["dev_command.txt"].decode()
