"""Sharded scoring (evaluation/sharding.py) and its merge (python -m evaluation.merge): a tiny parser and a
one-feature stacked classifier score a few pairs in one process, as 2 shards through Hydra's submitit_local
launcher (real processes) and as 2 torchrun CPU ranks; the merged files are the one-process bytes (and the same for
evaluation.contradiction and evaluation.self_contradiction on given texts). Then what goes
wrong: repeated ids, another shard count or input file, an input edited between shards, a failed shard, a merge
with records missing or repeated, a finished shard rerun."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from parser_helpers import compose_cfg
from test_contradiction import scripted  # noqa: F401  (a fixture: the rule-based components of the contradiction tests)

REFERENCE = "Police arrested a man in Dublin on Monday . He was released later ."
OUTPUTS = ("reports.jsonl", "summary.json", "report.html")


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    from models.entailment import save_format
    from train.parser import train

    tmp = tmp_path_factory.mktemp("models")
    train(compose_cfg("train_parser", ["+experiment=tiny", f"run_dir={tmp / 'parser'}"]))
    save_format(tmp / "clf", {"family": "stacked", "features": ["lex_raw"], "coef": [4.0], "intercept": -2.0,
                              "mean": [0.0], "std": [1.0]})
    return {"parser": tmp / "parser" / "best", "entailment": tmp / "clf"}


def write_pairs(path: Path, n: int = 12, ids=None) -> Path:
    """n pairs (predicates given: no detector needed); the generated sentence varies with the pair."""
    places = ["Cork", "Dublin", "Paris", "Rome", "Oslo", "Lima"]
    rows = []
    for k in range(n):
        toks = ["Police", "arrested", "a", "man", "in", places[k % len(places)], "."][: 4 + k % 3] + ["."]
        rows.append({"id": ids[k] if ids else f"p{k}", "reference": REFERENCE, "generated": [toks],
                     "predicates": [[{"predicate_index": 1, "verb_form": "arrest"}]]})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def model_args(models) -> list[str]:
    return [f"parser={models['parser']}", f"entailment={models['entailment']}"]


def one_process(models, pairs: Path, out: Path) -> Path:
    from evaluation.consistency import run

    run(compose_cfg("eval_consistency", [*model_args(models), f"pairs={pairs}"]), out)
    return out


def shard_run(models, pairs: Path, sweep: Path, index: int, count: int = 2, extra=()):
    from evaluation.consistency import run

    cfg = compose_cfg("eval_consistency", [*model_args(models), f"pairs={pairs}", f"shard.count={count}",
                                           f"shard.index={index}", f"shard.dir={sweep}", *extra])
    return run(cfg, sweep / str(index))


def merge(sweep: Path, out: Path):
    from evaluation.merge import merge as do_merge

    return do_merge(sweep, out)


def same_bytes(a: Path, b: Path) -> None:
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(list(args), cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_shard_of_a_record_is_a_stable_hash_of_its_id():
    from evaluation.sharding import shard_of

    assert [shard_of(f"p{k}", 2) for k in range(8)] == [shard_of(f"p{k}", 2) for k in range(8)]
    assert shard_of("p0", 3) == int.from_bytes(__import__("hashlib").sha256(b"p0").digest()[:8], "big") % 3
    assert {shard_of(f"p{k}", 4) for k in range(64)} == {0, 1, 2, 3}


def test_two_shards_in_process_merge_to_the_one_process_bytes_and_a_rerun_skips(models, tmp_path, monkeypatch):
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    one = one_process(models, pairs, tmp_path / "one")
    sweep = tmp_path / "sweep"
    for i in (0, 1):
        shard_run(models, pairs, sweep, i)
    merged = tmp_path / "merged"
    merge(sweep, merged)
    same_bytes(one, merged)
    shards = json.loads((merged / "shards.json").read_text())["shards"]
    assert sum(s["records"] for s in shards) == 12 and all(s["records_per_second"] > 0 for s in shards)
    assert "ETA" in (sweep / "shards" / "shard-00000-of-00002" / "shard.log").read_text()

    from models.consistency import ConsistencyPipeline  # a finished shard is skipped before any model loads

    monkeypatch.setattr(ConsistencyPipeline, "from_pretrained",
                        lambda *a, **k: pytest.fail("a finished shard loaded a model"))
    shard_run(models, pairs, sweep, 1)
    # an output edited after its shard finished is scored again, not merged
    rows = sweep / "shards" / "shard-00001-of-00002" / "rows.jsonl"
    rows.write_text(rows.read_text().replace('"ok"', '"ko"', 1))
    from evaluation.merge import MergeError

    with pytest.raises(MergeError, match="shard 2/2: its outputs changed"):
        merge(sweep, tmp_path / "m2")


def test_bad_sweeps_and_inputs_are_refused_naming_both(models, tmp_path):
    from evaluation.consistency import InputError
    from evaluation.merge import MergeError

    pairs = write_pairs(tmp_path / "pairs.jsonl")
    rep = write_pairs(tmp_path / "rep.jsonl", ids=["a", "b", "a", "c", "b"] + [f"x{k}" for k in range(7)])
    with pytest.raises(InputError, match=r"rep.jsonl: 2 id\(s\) repeat.*'a', 'b'"):
        shard_run({"parser": "no-such-parser", "entailment": "no-such-clf"}, rep, tmp_path / "s0", 0)
    assert not (tmp_path / "s0").exists()  # refused before anything was written or loaded

    sweep = tmp_path / "sweep"
    shard_run(models, pairs, sweep, 0)
    with pytest.raises(InputError, match=r"shard.count=2; this run asks for shard.count=3"):
        shard_run(models, pairs, sweep, 1, count=3)
    other = write_pairs(tmp_path / "other.jsonl")
    with pytest.raises(InputError, match=rf"scores {pairs}; this run was given {other}"):
        shard_run(models, other, sweep, 1)
    with pytest.raises(InputError, match=r"other settings for threshold \(threshold=0.5 there, 0.7 here\)"):
        shard_run(models, pairs, sweep, 1, extra=["threshold=0.7"])
    # shard 2 never ran: the merge names it
    with pytest.raises(MergeError, match=r"shard 2/2 never started"):
        merge(sweep, tmp_path / "m")
    # the input edited between shards
    write_pairs(pairs, n=13)
    with pytest.raises(InputError, match=rf"{pairs} changed since the sweep"):
        shard_run(models, pairs, sweep, 1)
    with pytest.raises(MergeError, match=rf"{pairs} changed since the sweep scored it"):
        merge(sweep, tmp_path / "m")


def test_a_failed_shard_is_named_with_its_log_and_the_others_are_kept(models, tmp_path):
    from evaluation.merge import MergeError

    pairs = write_pairs(tmp_path / "pairs.jsonl")
    sweep = tmp_path / "sweep"
    shard_run(models, pairs, sweep, 0)
    kept = (sweep / "shards" / "shard-00000-of-00002" / "rows.jsonl").read_bytes()
    clf = Path(models["entailment"])
    clf.rename(clf.with_name("clf_away"))  # the classifier gone while shard 2 runs: it fails loading it
    try:
        with pytest.raises(Exception):
            shard_run(models, pairs, sweep, 1)
    finally:
        clf.with_name("clf_away").rename(clf)
    with pytest.raises(MergeError) as err:
        merge(sweep, tmp_path / "m")
    log = sweep / "shards" / "shard-00001-of-00002" / "shard.log"
    assert "shard 2/2 failed" in str(err.value) and str(log) in str(err.value)
    assert (sweep / "shards" / "shard-00000-of-00002" / "rows.jsonl").read_bytes() == kept


def test_the_merge_names_missing_and_repeated_records(models, tmp_path):
    from evaluation.merge import MergeError

    pairs = write_pairs(tmp_path / "pairs.jsonl")
    sweep = tmp_path / "sweep"
    for i in (0, 1):
        shard_run(models, pairs, sweep, i)
    from evaluation.sharding import file_sha256

    d0, d1 = (sweep / "shards" / f"shard-0000{i}-of-00002" for i in (0, 1))
    lines0, lines1 = ((d / "rows.jsonl").read_text().splitlines(True) for d in (d0, d1))
    (d0 / "rows.jsonl").write_text("".join(lines0[1:] + lines1[:1]))  # one record lost, one scored twice
    for d in (d0,):  # as if a buggy shard had written them: the digests match
        done = json.loads((d / "done.json").read_text())
        done["sha256"]["rows.jsonl"] = file_sha256(d / "rows.jsonl")
        (d / "done.json").write_text(json.dumps(done))
    lost, twice = json.loads(lines0[0])["id"], json.loads(lines1[0])["id"]
    with pytest.raises(MergeError, match=rf"1 missing: '{lost}'\n  1 repeated: '{twice}'"):
        merge(sweep, tmp_path / "m")


@pytest.mark.slow  # two launches of fresh processes: about 40 s on 2 busy cores
def test_two_shards_through_submitit_local_and_torchrun_give_the_one_process_bytes(models, tmp_path):
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    one = one_process(models, pairs, tmp_path / "one")
    sweep = tmp_path / "sweep"
    done = cli(sys.executable, "-m", "evaluation.consistency", "-m", *model_args(models), f"pairs={pairs}",
               "shard.count=2", "shard.index=range(2)", "hydra/launcher=submitit_local", f"hydra.sweep.dir={sweep}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len([p for p in sweep.glob(".submitit/*") if p.name.isdigit()]) == 2  # two jobs of the launcher
    merged = cli(sys.executable, "-m", "evaluation.merge", str(sweep), f"out={tmp_path / 'merged'}")
    assert merged.returncode == 0, merged.stderr[-3000:]
    assert "shard 2/2:" in merged.stderr and "records/s" in merged.stderr
    same_bytes(one, tmp_path / "merged")

    ranks = tmp_path / "ranks"
    torchrun = Path(sys.executable).with_name("torchrun")
    done = cli(str(torchrun), "--standalone", "--nproc_per_node", "2", "-m", "evaluation.consistency",
               *model_args(models), f"pairs={pairs}", f"hydra.run.dir={ranks}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(p.name for p in (ranks / "shards").iterdir()) == ["shard-00000-of-00002", "shard-00001-of-00002"]
    merged = cli(sys.executable, "-m", "evaluation.merge", str(ranks), f"out={tmp_path / 'merged_ranks'}")
    assert merged.returncode == 0, merged.stderr[-3000:]
    same_bytes(one, tmp_path / "merged_ranks")


@pytest.mark.parametrize("entry", ["eval_consistency", "eval_contradiction", "eval_self_contradiction"])
def test_the_slurm_launcher_composes_with_the_shards(entry):
    from hydra import compose, initialize_config_dir

    from parser_helpers import CONF

    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        cfg = compose(config_name=entry, return_hydra_config=True,
                      overrides=["shard.count=4", "shard.index=2", "hydra/launcher=submitit_slurm",
                                 "hydra.launcher.partition=gpu", "hydra.launcher.gpus_per_node=1"])
    assert cfg.shard.count == 4 and cfg.shard.index == 2
    assert cfg.hydra.launcher._target_.endswith("SlurmLauncher") and cfg.hydra.launcher.gpus_per_node == 1
    assert cfg.hydra.launcher.submitit_folder.startswith(cfg.hydra.sweep.dir)


def test_contradiction_two_shards_merge_to_the_one_process_bytes(tmp_path, scripted):
    """evaluation.contradiction on rule-based components and a trained feature model: 2 shards, merged, give the
    one-process predictions.jsonl, metrics.json (P / R / F1, AUC, baselines) and report.html."""
    from evaluation.contradiction import run
    from test_contradiction import _pairs_file
    from train.contradiction import train

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    ckpt = ["parser=P", "detector=D", "entailment=E"]
    train(compose_cfg("train_contradiction", [*ckpt, f"data.train_file={pairs}", "cv.folds=2", "cv.C=[1.0]",
                                              "cv.feature_sets=[numbers]", "selection.files=[]", "analysis_cache=null"]),
          tmp_path / "R")
    args = [*ckpt, f"contradiction={tmp_path / 'R' / 'contradiction'}", f"pairs={pairs}", "gate=0"]
    run(compose_cfg("eval_contradiction", args), tmp_path / "one")
    sweep = tmp_path / "sweep"
    for i in (0, 1):
        run(compose_cfg("eval_contradiction", [*args, "shard.count=2", f"shard.index={i}", f"shard.dir={sweep}",
                                               "shard.chunk=4"]), sweep / str(i))
    merge(sweep, tmp_path / "merged")
    for name in ("predictions.jsonl", "metrics.json", "report.html"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "merged" / name).read_bytes(), name
    assert "baselines" in json.loads((tmp_path / "merged" / "metrics.json").read_text())


def test_each_torchrun_rank_gets_its_shard_and_its_gpu(monkeypatch, tmp_path):
    import torch

    from evaluation.sharding import ShardError, rank_device, shard_from_config

    cfg = compose_cfg("eval_consistency", [f"shard.dir={tmp_path}"])
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "1")
    shard = shard_from_config(cfg, tmp_path)
    assert (shard.index, shard.count) == (1, 4)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert rank_device(None) == "cuda:1" and rank_device("cpu") == "cpu"
    with pytest.raises(ShardError, match="shard.count=3 but torchrun runs 4 ranks"):
        shard_from_config(compose_cfg("eval_consistency", ["shard.count=3"]), tmp_path)


SELF_CONTRADICTION_OUTPUTS = ("generations.jsonl", "pairs.jsonl", "revised.jsonl", "metrics.json", "report.html")


def write_texts(path: Path) -> Path:
    said = ["Ada Lovelace was born in London in 1815. She was born in Paris in 1816. She lived in Surrey.",
            "The bridge opened in 1890. It opened in 1885 after a delay.", "Rain fell. The river rose in May.",
            "Kim founded the firm in 2001. Kim founded the firm in 1999.", ""]
    path.write_text("".join(json.dumps({"id": f"t{k}", "prompt": "Tell me", "text": t}) + "\n"
                            for k, t in enumerate(said)))
    return path


def self_contradiction_args(release: Path, texts: Path) -> list[str]:
    # threshold 0: every scored pair is flagged, so the random scorer still leaves fixes to merge
    return ["generator=none", f"texts={texts}", f"release={release}", "mitigation=delete", "threshold=0.0"]


def test_self_contradiction_two_shards_merge_to_the_one_process_bytes(tmp_path):
    """evaluation.self_contradiction generator=none texts=FILE on a tiny release of random weights: 2 shards, merged,
    give the one-process generations / pairs / revised JSONL, metrics.json and report.html; what the run took is
    in run.json only. A generator is refused sharding, by name, before any model loads."""
    from data_prep.records import DataFormatError
    from evaluation.self_contradiction import run
    from self_contradiction_helpers import tiny_release

    release = tiny_release(tmp_path / "release")
    texts = write_texts(tmp_path / "texts.jsonl")
    args = self_contradiction_args(release, texts)
    run(compose_cfg("eval_self_contradiction", args), tmp_path / "one")
    sweep = tmp_path / "sweep"
    for i in (0, 1):
        run(compose_cfg("eval_self_contradiction", [*args, "shard.count=2", f"shard.index={i}", f"shard.dir={sweep}",
                                                    "shard.chunk=2"]), sweep / str(i))
    merge(sweep, tmp_path / "merged")
    for name in SELF_CONTRADICTION_OUTPUTS:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "merged" / name).read_bytes(), name
    metrics = json.loads((tmp_path / "merged" / "metrics.json").read_text())
    assert metrics["texts"] == 5 and metrics["pairs"]["flagged"] > 0
    assert metrics["sentences_dropped"] + metrics["sentences_edited"] > 0
    assert not {"steps", "wall_seconds", "generator_usage", "cache"} & set(metrics)
    took = json.loads((tmp_path / "one" / "run.json").read_text())
    assert {"parse", "detect", "mitigate"} <= set(took["steps"]) and took["wall_seconds"] > 0

    # a generator, or a reviser beside given texts: refused before the model or the release loads
    for gen in ("generator=gemma3_270m", "generator=openai", "generator@reviser=smollm2_135m_instruct"):
        with pytest.raises(DataFormatError, match=r"A run with a generator or reviser stays one process: .*perplexity"):
            run(compose_cfg("eval_self_contradiction", [gen, f"texts={texts}", "release=no-such-release",
                                                        "shard.count=2", "shard.index=0", f"shard.dir={tmp_path / 's2'}"]),
                tmp_path / "x")
    assert not (tmp_path / "s2").exists()


@pytest.mark.slow  # three launches of fresh processes: about 80 s on 2 busy cores
def test_self_contradiction_through_submitit_local_and_torchrun_gives_the_one_process_bytes(tmp_path):
    from evaluation.self_contradiction import run
    from self_contradiction_helpers import tiny_release

    release = tiny_release(tmp_path / "release")
    args = self_contradiction_args(release, write_texts(tmp_path / "texts.jsonl"))
    run(compose_cfg("eval_self_contradiction", args), tmp_path / "one")
    entry = [sys.executable, "-m", "evaluation.self_contradiction", *args, "progress=false"]
    done = cli(*entry[:3], "-m", *entry[3:], "shard.count=2", "shard.index=range(2)", "hydra/launcher=submitit_local",
               f"hydra.sweep.dir={tmp_path / 'sweep'}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    torchrun = Path(sys.executable).with_name("torchrun")
    done = cli(str(torchrun), "--standalone", "--nproc_per_node", "2", *entry[1:], f"hydra.run.dir={tmp_path / 'ranks'}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for sweep in ("sweep", "ranks"):
        merged = cli(sys.executable, "-m", "evaluation.merge", str(tmp_path / sweep), f"out={tmp_path / sweep}_merged")
        assert merged.returncode == 0, merged.stderr[-3000:]
        for name in SELF_CONTRADICTION_OUTPUTS:
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / f"{sweep}_merged" / name).read_bytes(), name
