"""A language model's self-contradictions, fact by fact: trigger, detect and mitigate (ChatProtect's three steps on
QASem QAs; docs/self_contradiction.md):

    python -m evaluation.self_contradiction generator=gemma3_270m topics=FILE release=DIR hydra.run.dir=D
    python -m evaluation.self_contradiction generator=qwen2_5_coder_0_5b_instruct topics=FILE release=DIR \
        mitigation=revise hydra.run.dir=D
    python -m evaluation.self_contradiction generator=none texts=FILE.jsonl release=DIR mitigation=delete hydra.run.dir=D
    python -m evaluation.self_contradiction generator=none generator@reviser=qwen2_5_coder_0_5b_instruct texts=FILE.jsonl \
        release=DIR mitigation=revise revise.strategy=fact hydra.run.dir=D
    python -m evaluation.self_contradiction generator=openai generator.base_url=URL generator.model=NAME \
        prompts=FILE release=DIR mitigation=revise hydra.run.dir=D

Writes D/generations.jsonl (every text, trigger and revise request with its answer, status and refusal),
D/pairs.jsonl (the scored pairs in the shared ChatProtect JSONL format: add "label" to train the scorer on them),
D/revised.jsonl ({"id", "text", "revised"} and what changed), D/metrics.json (the same bytes for the same texts and
models), D/report.html, and D/run.json (what this run took: each step's seconds, generator usage, cache, wall time).

Given texts (generator=none texts=FILE or pairs=FILE) shard like evaluation.consistency (-m shard.count=N
'shard.index=range(N)', or torchrun; launch/README.md), then python -m evaluation.merge SWEEP out=DIR writes the
one-process files; a run with a generator stays one process (SHARD_REFUSAL says why).
"""
from __future__ import annotations

import json
import logging
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from common.tracking import init_wandb
from data_prep.records import DataFormatError
from evaluation.self_contradiction_files import (RUN_FIGURES, text_rows, write_metrics, write_text_rows,
                                                 write_texts)
from evaluation.sharding import ShardError, refuse_repeated_ids, run_shard, settings_of, shard_from_config
from models.progress import run_with_summary

log = logging.getLogger(__name__)
INPUTS = ("topics", "prompts", "texts", "pairs")
SHARD_REFUSAL = ("sharded self-contradiction scores given texts with no model that writes: generator=none texts=FILE "
                 "(or pairs=FILE), mitigation none or delete, no reviser. A run with a generator or reviser stays one process: the figures "
                 "it computes over all texts at once (perplexity, the generator's usage and response cache) are not "
                 "rebuilt from shards, and a server's sampled answers need not repeat in another process; "
                 "drop shard.count")


def read_input(cfg: DictConfig) -> tuple[str, list[dict], dict]:
    """(kind, rows, skipped counts), checked before any model loads."""
    from evaluation import self_contradiction_inputs as inputs

    given = [k for k in INPUTS if cfg[k]]
    if len(given) != 1:
        raise DataFormatError(f"give exactly one of {', '.join(k + '=FILE' for k in INPUTS)} (got {given or 'none'})")
    kind = given[0]
    path = Path(hydra.utils.to_absolute_path(str(cfg[kind])))
    reader = {"topics": inputs.read_topics, "prompts": inputs.read_prompts, "texts": inputs.read_texts,
              "pairs": inputs.read_pair_texts}[kind]
    rows, skipped = reader(path)
    if cfg.limit:
        rows = rows[:int(cfg.limit)]
    return kind, rows, dict(skipped)


def build_generator(cfg: DictConfig):
    """The configured generator, or None (generator=none)."""
    gen = cfg.generator
    if not gen._target_:
        return None
    return hydra.utils.instantiate(gen)


def sampling_of(node):
    from models.generate.base import sampling

    return sampling(**OmegaConf.to_container(node, resolve=True))


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from models.self_contradiction.components import load_scorer_components, model_paths
    from models.self_contradiction.fact_revise import FactReviseSettings
    from models.self_contradiction.loop import LoopSettings, generate_texts, self_contradiction_loop
    from models.self_contradiction.trigger import TriggerSettings

    start = time.perf_counter()
    kind, rows, skipped = read_input(cfg)
    has_generator, has_reviser = bool(cfg.generator._target_), bool(cfg.reviser._target_)
    # a reviser is a model that writes too (and its perplexity is measured over all texts at once)
    shard = this_shard(cfg, run_dir, kind, rows, has_generator or has_reviser)
    if not has_generator and kind in ("topics", "prompts"):
        raise DataFormatError(f"{kind}= needs a generator to write the texts (generator=gemma3_270m or generator=openai)")
    if not has_generator and not has_reviser and cfg.mitigation == "revise":
        raise DataFormatError("mitigation=revise needs a generator or a reviser (generator=gemma3_270m, "
                              "generator@reviser=qwen2_5_coder_0_5b_instruct)")
    paths = model_paths(cfg.release, {k: cfg[k] for k in ("parser", "detector", "entailment", "contradiction")})
    generator = build_generator(cfg)
    # the reviser: its own model when given (generator@reviser=NAME), else the generator
    reviser = hydra.utils.instantiate(cfg.reviser) if has_reviser else None
    # a chat model is asked with ChatProtect's prompts (conf/chat_prompts/), a base model with the cloze
    chat_prompts = hydra.utils.instantiate(cfg.chat_prompts) \
        if getattr(generator, "chat", False) or getattr(reviser, "chat", False) else None
    settings = LoopSettings(mitigation=str(cfg.mitigation), within=bool(cfg.within),
                            trigger=TriggerSettings(str(cfg.trigger.qas), str(cfg.trigger.template), chat_prompts),
                            rounds=int(cfg.revise.rounds), trigger_sampling=sampling_of(cfg.trigger.sampling),
                            revise_sampling=sampling_of(cfg.revise.sampling), perplexity=bool(cfg.perplexity),
                            revise_strategy=str(cfg.revise.strategy),
                            fact=FactReviseSettings(int(cfg.revise.candidates), float(cfg.revise.keep_qas),
                                                    None if cfg.revise.max_perplexity_increase is None
                                                    else float(cfg.revise.max_perplexity_increase),
                                                    str(cfg.revise.remove), bool(cfg.revise.draft_first),
                                                    str(cfg.revise.perplexity_context)))
    run_dir.mkdir(parents=True, exist_ok=True)
    if shard is not None:
        return run_sharded(cfg, shard, kind, rows, skipped, paths, settings)

    generations, steps = [], {}
    if kind in ("topics", "prompts"):
        t0 = time.perf_counter()
        generations = generate_texts(rows, generator, settings.trigger.template, chat_prompts)
        steps["generate"] = {"items": len(rows), "seconds": round(time.perf_counter() - t0, 3)}
        rows = [{"id": g["id"], "prompt": g["prompt"], "text": g["text"]} for g in generations]
    else:
        generations = [{"id": r["id"], "prompt": r["prompt"], "text": r["text"], "status": "given"} for r in rows]

    detector, parser, scorer = load_scorer_components(paths, int(cfg.batch_size))
    if cfg.detect == "judge":  # the chat model decides; the trained scorer still aligns the QAs
        from models.self_contradiction.judge import JudgeScorer

        if chat_prompts is None:
            raise DataFormatError("detect=judge needs a chat model as generator (generator=qwen2_5_coder_0_5b_instruct)")
        scorer = JudgeScorer(scorer, generator, chat_prompts, float(cfg.judge.threshold), sampling_of(cfg.judge.explain))
    if generator is None and reviser is None and cfg.mitigation != "revise":  # given texts, no model that writes: per-text rows
        return run_given_texts(cfg, run_dir, start, kind, rows, skipped, (detector, parser, scorer), settings, paths)
    if cfg.threshold is not None:
        scorer.threshold = float(cfg.threshold)
    result = self_contradiction_loop(rows, scorer, detector, parser, generator, settings, reviser)

    gen_name = getattr(generator, "name", None)
    write_texts(result, generations, gen_name, run_dir)

    metrics = result["metrics"]
    metrics["steps"] = {**steps, **metrics["steps"]}
    for s in metrics["steps"].values():
        s.setdefault("per_second", round(s["items"] / s["seconds"], 3) if s["seconds"] else None)
    gen_errors = sum(g.get("status") == "error" for g in generations)
    metrics.update({"input": kind, "inputs": len(rows), "skipped_lines": skipped, "generator": gen_name,
                    "reviser": getattr(reviser or generator, "name", None), "revise_strategy": settings.revise_strategy,
                    "generator_is_chat": getattr(generator, "chat", None), "text_generation_errors": gen_errors,
                    "threshold": scorer.threshold, "models": paths,
                    "cache": {"hits": m.cache.hits, "misses": m.cache.misses} if (m := reviser or generator) else None,
                    "wall_seconds": round(time.perf_counter() - start, 2)})
    if generator is not None and "gemma3_270m" in str(gen_name):
        metrics["note"] = "figures from Gemma 3 270M, a weak base model: they test the loop, not a real model"
    took = {k: metrics.pop(k) for k in RUN_FIGURES}  # what the run took: run.json (metrics.json: what it found)
    write_metrics(result, metrics, run_dir, bool(cfg.html))
    return finish(cfg, run_dir, metrics, took)


def this_shard(cfg: DictConfig, run_dir: Path, kind: str, rows: list[dict], has_writer: bool):
    """This process's shard (None: one process), checked before any model loads. Ids that repeat are refused
    (revised.jsonl and a merge match texts by id); a run with a model that writes refuses shard.count > 1."""
    try:
        refuse_repeated_ids([str(r["id"]) for r in rows], cfg[kind])
        shard = shard_from_config(cfg, run_dir)
    except ShardError as e:
        raise DataFormatError(f"{e}; nothing was scored") from None
    if shard is not None and (has_writer or cfg.mitigation == "revise"):  # revise asks a model to write, too
        raise DataFormatError(SHARD_REFUSAL)
    return shard


def run_given_texts(cfg: DictConfig, run_dir: Path, start: float, kind: str, rows: list[dict], skipped: dict,
                    components, settings, paths: dict) -> dict:
    """Given texts with no generator: the files written from per-text rows by the writer the merge of a sharded run
    uses (batch_scope text: the same bytes)."""
    detector, parser, scorer = components
    if cfg.threshold is not None:
        scorer.threshold = float(cfg.threshold)
    text_out, steps = loop_on_given_texts(rows, scorer, detector, parser, settings, str(cfg.batch_scope))
    metrics = write_text_rows(text_out, run_dir, given_texts_info(kind, rows, skipped, scorer, settings, paths),
                              bool(cfg.html))
    took = {"steps": steps, "generator_usage": None, "cache": None, "wall_seconds": round(time.perf_counter() - start, 2)}
    return finish(cfg, run_dir, metrics, took)


def given_texts_info(kind: str, rows: list[dict], skipped: dict, scorer, settings, paths: dict) -> dict:
    """What the files of given texts say beside the loop's figures (a shard's done.json keeps it for the merge)."""
    return {"mitigation": settings.mitigation,
            "facts": {"input": kind, "inputs": len(rows), "skipped_lines": skipped, "generator": None,
                      "generator_is_chat": None, "text_generation_errors": 0, "threshold": scorer.threshold,
                      "models": paths}}


def finish(cfg: DictConfig, run_dir: Path, metrics: dict, took: dict) -> dict:
    """run.json, W&B and the closing log line; returns metrics.json's figures with what the run took."""
    (run_dir / "run.json").write_text(json.dumps(took, indent=1, ensure_ascii=False))
    wandb_run = init_wandb(cfg, "eval-self-contradiction", str(run_dir))  # the config as W&B sees it is masked
    if wandb_run is not None:
        wandb_run.log({k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        wandb_run.finish()
    log.info("self-contradiction: %d texts, %d sentences, rate %s, mitigation %s removed %s, informativeness kept %s",
             metrics["texts"], metrics["sentences"], metrics["self_contradiction_rate"], metrics["mitigation"],
             metrics["mitigation_removed"], metrics["informativeness_kept"])
    return {**metrics, **took}


def run_sharded(cfg: DictConfig, shard, kind: str, rows: list[dict], skipped: dict, paths: dict, settings) -> dict:
    """This process's shard of the given texts (no generator): the loop on each chunk, one row per text."""
    from models.self_contradiction.components import load_scorer_components

    loaded = []

    def score(chunk: list[dict]) -> tuple[list[dict], dict]:
        if not loaded:  # the models load on the first chunk: a finished shard is skipped without them
            loaded.append(load_scorer_components(paths, int(cfg.batch_size)))
            if cfg.threshold is not None:
                loaded[0][2].threshold = float(cfg.threshold)
        detector, parser, scorer = loaded[0]
        info = given_texts_info(kind, rows, skipped, scorer, settings, paths)
        return loop_on_given_texts(chunk, scorer, detector, parser, settings, str(cfg.batch_scope))[0], info

    try:
        done = run_shard(shard, "evaluation.self_contradiction", Path(hydra.utils.to_absolute_path(str(cfg[kind]))),
                         rows, [str(r["id"]) for r in rows], settings_of(cfg), score, int(cfg.shard.chunk))
    except ShardError as e:
        raise DataFormatError(str(e)) from None
    return {"texts": done["records"], "shard": done["index"], "shards": done["count"]}


def loop_on_given_texts(rows: list[dict], scorer, detector, parser, settings, scope: str) -> tuple[list[dict], dict]:
    """The loop on given texts (no generator) -> (one row per text as text_rows, the steps' items and seconds).
    scope text: each text through the loop alone (its sentences and pairs batched with no other text's), so a text's
    row does not depend on the texts beside it and a sharded run merges to one process's bytes; run: one loop over
    all (fuller batches; padding can move a probability in its last digits, or flip a near-tie, with the batch)."""
    from models.self_contradiction.loop import self_contradiction_loop

    if scope not in ("text", "run"):
        raise DataFormatError(f"batch_scope={scope}: give text or run")
    out, steps = [], {}
    for group in ([[r] for r in rows] if scope == "text" else [rows] if rows else []):
        result = self_contradiction_loop(group, scorer, detector, parser, None, settings)
        generations = [{"id": r["id"], "prompt": r["prompt"], "text": r["text"], "status": "given"} for r in group]
        out += text_rows(result, generations)
        for name, step in result["metrics"]["steps"].items():
            total = steps.setdefault(name, {"items": 0, "seconds": 0.0})
            total["items"] += step["items"]
            total["seconds"] = round(total["seconds"] + step["seconds"], 3)
    for total in steps.values():
        total["per_second"] = round(total["items"] / total["seconds"], 3) if total["seconds"] else None
    return json.loads(json.dumps(out, ensure_ascii=False)), steps  # as a shard's rows.jsonl reads back


def merge_outputs(rows: list[dict], out_dir: Path, infos: list[dict]) -> dict:
    """evaluation.merge's writer for a sweep of this entry point: the one-process files from the shards' texts."""
    if any(i != infos[0] for i in infos[1:]):
        raise ShardError(f"the shards scored with different thresholds or models: {infos}")
    return write_text_rows(rows, out_dir, infos[0], html=True)


@hydra.main(version_base="1.3", config_path="../conf", config_name="eval_self_contradiction")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    from models.release import ReleaseError

    try:
        run_with_summary(log, "evaluation.self_contradiction", cfg,
                         lambda: run(cfg, Path(HydraConfig.get().runtime.output_dir)), lambda m: m["texts"], "texts")
    except (DataFormatError, ReleaseError) as e:  # names the file, line or option
        log.error("%s", e)
        sys.exit(1)


if __name__ == "__main__":
    from models.memory import use_jemalloc

    use_jemalloc()  # before anything allocates: RSS held down on long runs (models/memory.py)
    main()
