"""Score generated texts against their references, QA by QA:
python -m evaluation.consistency parser=DIR entailment=DIR detector=DIR reference=REF.txt generated=GEN.txt
python -m evaluation.consistency parser=DIR entailment=DIR detector=DIR pairs=PAIRS.jsonl

Writes into the run dir: reports.jsonl (one report per pair, see models/consistency/pipeline.py),
report.html (the generated text with predicates and unsupported answers highlighted, the QAs
under each predicate), summary.json (pairs, mean score, statuses: a function of the reports alone)
and run.json (what this run did: seconds, the scorer's counters).

Sharded (evaluation/sharding.py; launch/README.md), then merged by python -m evaluation.merge SWEEP out=DIR:
python -m evaluation.consistency -m release=R pairs=FILE shard.count=N 'shard.index=range(N)' hydra/launcher=submitit_local
torchrun --nproc_per_node G -m evaluation.consistency release=R pairs=FILE hydra.run.dir=SWEEP"""
from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path

import hydra
from omegaconf import DictConfig

from evaluation.sharding import ShardError, refuse_repeated_ids, rank_device, run_shard, settings_of, shard_from_config
from models.consistency.inputs import pair_problems
from models.progress import run_with_summary

log = logging.getLogger(__name__)


class InputError(ValueError):
    pass


def read_pairs(cfg: DictConfig) -> list[dict]:
    """The pairs to score, from `pairs` (JSONL) or from `reference` + `generated` (text files).
    A JSONL line that is not an object with reference and generated, or whose fields have the
    wrong types or indices outside their sentence, is an error naming the line."""
    if cfg.pairs:
        path = Path(cfg.pairs)
        if not path.exists():
            raise InputError(f"pairs file {path} not found")
        pairs, bad = [], []
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}:{lineno}: not JSON ({e.msg})") from None
            if not isinstance(obj, dict) or "reference" not in obj or "generated" not in obj:
                raise InputError(f"{path}:{lineno}: expected an object with 'reference' and 'generated'")
            obj.setdefault("id", f"{path.stem}:{lineno}")
            pairs.append(obj)
            bad += [f"{path}:{lineno}: {p}" for p in pair_problems(obj)]
        if bad:  # all of them at once, before any model loads
            raise InputError(f"{len(bad)} problem(s) in {path}; nothing was scored:\n  " + "\n  ".join(bad[:50]))
        try:  # a merge matches reports to pairs by id
            refuse_repeated_ids([str(p["id"]) for p in pairs], path)
        except ShardError as e:
            raise InputError(f"{e}; nothing was scored") from None
        return pairs
    if cfg.reference and cfg.generated:
        texts = {}
        for key in ("reference", "generated"):
            path = Path(cfg[key])
            if not path.exists():
                raise InputError(f"{key} file {path} not found")
            texts[key] = path.read_text(encoding="utf-8")
        pair = {"id": Path(cfg.generated).stem, **texts}
        if pair_problems(pair):
            raise InputError("; ".join(pair_problems(pair)))
        return [pair]
    raise InputError("give pairs=PAIRS.jsonl, or reference=FILE and generated=FILE")


def summarize(reports: list[dict]) -> dict:
    scored = [r["score"] for r in reports if r["score"] is not None]
    return {"pairs": len(reports), "scored": len(scored),
            "mean_score": sum(scored) / len(scored) if scored else None,
            "qas": sum(r["n_qas"] for r in reports), "unsupported": sum(len(r["unsupported"]) for r in reports),
            "status": dict(Counter(r["status"] for r in reports))}


def write_outputs(reports: list[dict], out_dir: Path, html: bool = True) -> dict:
    """reports.jsonl, summary.json and report.html from the reports alone: the one-process run and the merge of a
    sharded one (evaluation/merge.py) both write them here, so the same reports give the same bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "reports.jsonl").open("w", encoding="utf-8") as f:
        for r in reports:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    summary = summarize(reports)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1))
    if html:
        from evaluation.consistency_html import write_page

        write_page(reports, out_dir / "report.html")
    return summary


def merge_outputs(reports: list[dict], out_dir: Path, infos: list[dict]) -> dict:
    """evaluation.merge's writer for a sweep of this entry point: the one-process files from the shards' reports."""
    return write_outputs(reports, out_dir)


def build_pipeline(cfg: DictConfig):
    from models.consistency import ConsistencyPipeline

    threshold = cfg.threshold if str(cfg.threshold) == "dev" else float(cfg.threshold)
    return ConsistencyPipeline.from_pretrained(cfg.entailment, parser=cfg.parser, detector=cfg.detector,
                                               device=rank_device(cfg.device), batch_size=int(cfg.batch_size),
                                               threshold=threshold, copulas=bool(cfg.copulas),
                                               precision=str(cfg.precision),
                                               reference_scope=str(cfg.reference_scope),
                                               reference_cache=cfg.reference_cache,
                                               response_score=str(cfg.response_score),
                                               share_weight=float(cfg.share_weight))


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from models.release import apply_release

    start = time.perf_counter()
    pairs = read_pairs(cfg)  # input errors surface before any model loads
    try:
        shard = shard_from_config(cfg, run_dir)
    except ShardError as e:
        raise InputError(str(e)) from None
    if shard is not None and not cfg.pairs:
        raise InputError("sharded scoring reads a pairs file: give pairs=PAIRS.jsonl")
    settings = settings_of(cfg)
    apply_release(cfg, ("parser", "detector", "entailment"))  # release=DIR: checked whole before any model loads
    if not cfg.entailment:
        raise InputError("give release=DIR (bash scripts/release.sh), or entailment=DIR (with parser= and detector=)")
    pipes = []

    def score(chunk: list[dict]) -> tuple[list[dict], dict]:
        if not pipes:
            pipes.append(build_pipeline(cfg))
        batched = not cfg.one_at_a_time
        if cfg.batch_scope == "pair":  # a report depends on its own pair alone, whatever runs beside it
            reports = [r for pair in chunk for r in pipes[0].run([pair], batched=batched)]
        elif cfg.batch_scope == "run":
            reports = pipes[0].run(chunk, batched=batched)
        else:
            raise InputError(f"batch_scope={cfg.batch_scope}: give pair or run")
        return reports, {"scorer_stats": dict(getattr(pipes[0].scorer, "stats", {}))}

    if shard is not None:
        try:
            done = run_shard(shard, "evaluation.consistency", Path(cfg.pairs), pairs, [str(p["id"]) for p in pairs],
                             settings, score, int(cfg.shard.chunk))
        except ShardError as e:
            raise InputError(str(e)) from None
        reports = [json.loads(line) for line in (shard.dir / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
        return {**summarize(reports), "shard": done["index"], "shards": done["count"]}
    reports, stats = score(pairs)
    summary = write_outputs(reports, run_dir, bool(cfg.html))
    # what this run did, apart from the reports: summary.json stays the same bytes for the same reports
    (run_dir / "run.json").write_text(json.dumps({**stats, "seconds": round(time.perf_counter() - start, 3)}, indent=1))
    for r in reports:
        score_text = "n/a" if r["score"] is None else f"{r['score']:.3f} ({cfg.response_score})"
        log.info("%s: score %s, %d of %d QAs supported [%s]", r["id"], score_text, r["n_supported"], r["n_qas"],
                 r["status"])
        for m in r["messages"]:
            log.info("  %s", m)
    log.info("wrote %s", run_dir)
    return {**summary, **stats}


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_consistency")
def main(cfg: DictConfig) -> None:
    import sys

    from hydra.core.hydra_config import HydraConfig

    try:
        run_with_summary(log, "evaluation.consistency", cfg, lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)),
                         lambda s: s["pairs"], "responses", lambda s: f", {s['qas']} QAs")
    except InputError as e:  # names the file and line: a traceback adds nothing
        log.error("%s", e)
        sys.exit(1)


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
