"""The release (bash scripts/release.sh PROFILE DIR -> python -m release): the `tiny` profile, the same
pipeline as `quick` and `full` on tiny random models and data slices, run end to end once on the real
data; then what a user does with the folder (score a text, load it, publish it) and what goes wrong
(a rerun, an edited or deleted output, a corrupt weight file, a second run in the same folder)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, real_data_dir

pytestmark = pytest.mark.slow  # about 3 minutes on 2 cores: every stage is a process of its own

PROFILE_STAGES = {"data", "parser", "detector", "entailment", "encoder_fold0", "encoder_fold1", "contradiction",
                  "eval_parser", "eval_entailment", "eval_contradiction", "eval_consistency_benchmark",
                  "eval_decomp_score", "eval_copula", "eval_external", "encoder_fold0_seed14", "encoder_fold1_seed14", "contradiction_seed14",
                  "eval_contradiction_seed14", "contradiction_ensemble", "contradiction_seeds",
                  "eval_contradiction_ensemble"}


def run_release(release: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "release", "tiny", str(release), "--cores", "2", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "QASEM_DATA_DIR": str(real_data_dir()), **(env or {})})


def stamp_times(release: Path) -> dict[str, int]:
    return {p.stem: p.stat().st_mtime_ns for p in (release / "stages").glob("*.json")}


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    if not (real_data_dir() / "qasem-consistency").is_dir():
        pytest.fail(f"real data directory {real_data_dir()} is missing (set QASEM_DATA_DIR)")
    out = tmp_path_factory.mktemp("release") / "tiny"
    done = run_release(out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_the_manifest_holds_the_contract(release):
    m = json.loads((release / "manifest.json").read_text())
    assert m["profile"] == "tiny" and m["git_commit"] and set(m["stages"]) == PROFILE_STAGES
    for name, stage in m["stages"].items():
        assert " -m " in stage["command"] and stage["wall_s"] > 0, name
        assert stage["peak_rss_mb"] > (50 if name != "contradiction_seeds" else 5), name  # that one only reads files
    assert "config" in m["stages"]["parser"] and "span_tiny" in m["stages"]["parser"]["config"]
    x = m["metrics"]
    figures = [x["parser"][s][k] for s in ("qasrl-gs", "qanom") for k in ("ua_f1", "la_f1")]
    figures += [x["entailment"]["overall"][k] for k in ("bacc", "auc")]
    figures += [x["contradiction"][k] for k in ("precision", "recall", "f1")]
    assert all(0 <= v <= 1 for v in figures), figures
    assert set(x["entailment"]) >= {"cliff", "factscore", "verifiability"}
    assert set(x["consistency_benchmark"]) >= {"pearson", "spearman"}
    summedits = x["external"]["summedits"]  # the development split outside the benchmark (16 records at tiny)
    assert summedits["split"] == "evaluation" and summedits["records"] == 16
    # random tiny models may give a summary no QA: it is unscored, never a score of 1; none scored, no figure
    assert (summedits["mean_bacc"] is None) == (summedits["unscored"] == 16)
    assert summedits["mean_bacc"] is None or 0 <= summedits["mean_bacc"] <= 1
    assert 0 <= summedits["word_overlap"]["mean_bacc"] <= 1
    for name, model in m["models"].items():
        assert model["files"] and all((release / f).is_file() for f in model["files"]), name
    assert "qasem-consistency/test.jsonl" in m["data_sha256"] and (release / "README.md").read_text().startswith("---")


def test_the_seeds_give_a_mean_and_their_ensemble_is_shipped(release):
    from models.contradiction import ContradictionEnsemble, load_contradiction_model
    from release.readme_table import table

    m = json.loads((release / "manifest.json").read_text())
    c = m["metrics"]["contradiction"]
    seeds = c["seeds"]
    assert seeds["n"] == 2 and set(seeds["seeds"]) == {"13", "14"}
    f1 = {s: v["f1"] for s, v in seeds["seeds"].items()}
    assert min(f1.values()) <= seeds["f1_mean"] <= max(f1.values())
    assert all(v["threshold_rule"] in ("pooled", "weighted", "platt", "rate", "human") for v in seeds["seeds"].values())
    # the shipped scorer: the two seeds' models as one, at the threshold read off their averaged out-of-fold P
    assert c["shipped"] == "seed_ensemble" and m["models"]["contradiction"]["path"] == "runs/contradiction_seeds/contradiction"
    ens = load_contradiction_model(release / m["models"]["contradiction"]["path"])
    assert isinstance(ens, ContradictionEnsemble) and len(ens.members) == 2
    assert ens.threshold == pytest.approx(seeds["seed_mean"]["threshold"]) == pytest.approx(c["threshold"])
    evaluated = json.loads((release / "eval" / "contradiction_ensemble" / "metrics.json").read_text())
    assert c["f1"] == evaluated["f1"] and evaluated["pairs"] == c["n"]
    assert "seed14" in m["stages"]["encoder_fold0_seed14"]["command"] and "seed=14" in m["stages"]["contradiction_seed14"]["command"]
    assert "the 2 seeds' mean P (shipped)" in table(m) and "release.sh tiny DIR`" in table(m)  # the profile's own seed
    assert "ensemble.members=[runs/contradiction,runs/contradiction_seed14]" in m["stages"]["contradiction_ensemble"]["command"]


def test_a_seed_added_to_a_finished_release_trains_only_its_own_stages(release):
    dry = run_release(release, "--dry-run", "--extra-seeds", "15")
    assert dry.returncode == 0, dry.stderr[-2000:]
    table = dry.stdout.split("Job stats:")[1].split("total")[0].splitlines()[3:]  # the rows after the header
    jobs = dict(line.split()[:2] for line in table if line.strip())
    assert jobs == {"encoder_seed": "2", "contradiction_seed": "1", "evaluate_seed": "1", "contradiction_ensemble": "1",
                    "contradiction_seeds": "1", "evaluate_ensemble": "1", "manifest": "1", "all": "1"}, dry.stdout
    # another member: said, and a dry run changes nothing (the next test's rerun finds every stage done)
    assert ("release: stage contradiction_ensemble runs again: reads now stages/contradiction_seed15.json; its command "
            "changed") in dry.stderr


def test_a_rerun_trains_nothing(release):
    before = stamp_times(release)
    again = run_release(release)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "Nothing to be done" in again.stdout + again.stderr
    assert stamp_times(release) == before


def test_a_touched_code_file_reruns_nothing(release):
    """A fresh checkout or a machine restored from a snapshot moves every mtime and no byte."""
    code = ROOT / "evaluation" / "copula.py"
    st = code.stat()
    try:
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns + 3600 * 10**9))
        dry = run_release(release, "--dry-run")
    finally:
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr, dry.stdout[-2000:]


def test_an_edited_or_deleted_output_reruns_that_stage_and_what_follows(release):
    before = stamp_times(release)
    metrics = release / "eval" / "copula" / "metrics.json"
    metrics.write_text(metrics.read_text().replace("{", "{\"edited\": 1, ", 1))
    dry = run_release(release, "--dry-run")
    assert dry.returncode == 0 and "runs again" in dry.stderr and "eval/copula/metrics.json" in dry.stderr
    assert "evaluate" in dry.stdout and "parser " not in dry.stdout and "entailment" not in dry.stdout, dry.stdout
    assert run_release(release).returncode == 0
    after = stamp_times(release)
    assert [s for s in after if after[s] != before.get(s)] == ["eval_copula"]
    assert "edited" not in metrics.read_text()
    shutil.rmtree(release / "eval" / "decomp_score")
    assert run_release(release).returncode == 0
    again = stamp_times(release)
    assert [s for s in again if again[s] != after[s]] == ["eval_decomp_score"]


def test_stages_builds_only_the_named_stages_and_a_later_run_goes_on(release):
    shutil.rmtree(release / "eval" / "copula")
    dry = run_release(release, "--dry-run", "--stages", "eval_copula")
    assert dry.returncode == 0, dry.stderr[-2000:]
    table = dry.stdout.split("Job stats:")[1].split("total")[0].splitlines()[3:]
    assert dict(line.split()[:2] for line in table if line.strip()) == {"evaluate": "1"}, dry.stdout
    before = stamp_times(release)
    assert run_release(release, "--stages", "eval_copula").returncode == 0
    after = stamp_times(release)
    assert [s for s in after if after[s] != before.get(s)] == ["eval_copula"]
    assert (release / "eval" / "copula" / "metrics.json").exists() and not (release / "manifest.json").exists()
    assert run_release(release).returncode == 0  # the whole release: only the manifest was left
    assert stamp_times(release) == after and (release / "manifest.json").exists()


def test_the_release_scores_a_text_from_the_cli_and_from_python(release, tmp_path):
    ex = ROOT / "examples" / "consistency"
    env = {**os.environ, "QASEM_DATA_DIR": str(real_data_dir()), "QASEM_ALLOCATOR": "glibc"}
    cmd = [sys.executable, "-m", "evaluation.consistency", f"release={release}", f"reference={ex / 'reference.txt'}",
           f"generated={ex / 'generated.txt'}", f"hydra.run.dir={tmp_path / 'D'}", "progress=false"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "D" / "summary.json").read_text())["pairs"] == 1
    pairs = real_data_dir() / "chatprotect" / "chatgpt.test.jsonl"
    cmd = [sys.executable, "-m", "evaluation.contradiction", f"release={release}", f"pairs={pairs}", "limit=4",
           f"hydra.run.dir={tmp_path / 'C'}", "html=false", "progress=false"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "C" / "metrics.json").read_text())["pairs"] == 4

    from models.consistency import ConsistencyPipeline

    pipe = ConsistencyPipeline.from_pretrained(str(release))
    pairs = [json.loads(line) for line in (ex / "pairs.jsonl").read_text().splitlines()]
    reports = pipe.run(pairs[:2])
    assert [r["id"] for r in reports] == [p["id"] for p in pairs[:2]] and pipe.parser is not None


def test_a_missing_or_corrupt_model_file_is_refused_before_anything_loads(release, tmp_path):
    from models.release import ReleaseError, release_models

    copy = tmp_path / "copy"
    shutil.copytree(release, copy, ignore=shutil.ignore_patterns("outputs", "data", ".snakemake"))
    m = json.loads((copy / "manifest.json").read_text())
    weights = next(f for f in m["models"]["detector"]["files"] if f.endswith(".safetensors"))
    raw = bytearray((copy / weights).read_bytes())
    raw[-1] ^= 0xFF
    (copy / weights).write_bytes(bytes(raw))
    with pytest.raises(ReleaseError, match=f"detector model's file {weights} is corrupt"):
        release_models(copy)
    victim = next(iter(m["models"]["contradiction"]["files"]))
    (copy / victim).unlink()
    (copy / weights).write_bytes((release / weights).read_bytes())
    with pytest.raises(ReleaseError, match=f"contradiction model's file {victim} is missing"):
        release_models(copy)
    with pytest.raises(ReleaseError, match="no manifest.json"):
        release_models(copy / "runs" / "parser" / "best")


def test_a_second_release_in_the_same_folder_is_refused_naming_the_holder(release):
    from train.run_guard import run_dir_lock

    with run_dir_lock(release):
        done = run_release(release)
    assert done.returncode != 0 and "in use by a live run (pid" in done.stderr
    other = run_release(release.parent / "elsewhere", env={"QASEM_DATA_DIR": str(release / "no-such-data")})
    assert other.returncode != 0 and "release stage data" in other.stderr and "QASEM_DATA_DIR" in other.stderr


def test_the_set_publishes_and_loads_back_from_the_hub(release, hub, tmp_path):
    from release.__main__ import main
    from models.release import release_models

    endpoint, store = hub
    assert main(["tiny", str(release), "hub=push", "hub.repo_id=org/qasem-set"]) == 0
    models = release_models("org/qasem-set")
    assert set(models) == {"parser", "detector", "entailment", "contradiction"}
    assert Path(models["parser"]).is_dir() and not (Path(models["parser"]).parent / "checkpoints").exists()

    from models.consistency import ConsistencyPipeline

    assert ConsistencyPipeline.from_pretrained("org/qasem-set").detector is not None


def test_plain_pairs_become_annotation_items_parsed_by_the_release(release):
    """annotate.serve tasks=PAIRS.jsonl release=DIR: items from plain texts, parsed on the fly."""
    from annotate.tasks import TaskFileError, load_tasks
    from models.consistency import ConsistencyPipeline

    pairs = ROOT / "examples" / "consistency" / "pairs.jsonl"
    rows = [json.loads(line) for line in pairs.read_text().splitlines()]
    parse = ConsistencyPipeline.from_pretrained(str(release)).run
    # tiny random models may find no QA at all: then there is nothing to annotate, and the file says so
    with_qas = [f"report:{r['id']}" for r in parse(rows) if r["n_qas"]]
    if with_qas:
        items = load_tasks(pairs, parse=parse)
        got = [i["item_id"] for i in items]  # in file order, ids from the pairs (a report whose QAs have no span is left out)
        assert got and got == [x for x in with_qas if x in got]
        assert all(q["suggestion"] is not None for i in items for q in i["qas"]) and items[0]["reference"]
    else:
        with pytest.raises(TaskFileError, match="no items"):
            load_tasks(pairs, parse=parse)
    with pytest.raises(TaskFileError, match="pairs.jsonl:1: a plain pair .* give release=DIR"):
        load_tasks(pairs)
