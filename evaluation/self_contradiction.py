"""A language model's self-contradictions, fact by fact: trigger, detect and mitigate (ChatProtect's three steps on
QASem QAs; docs/self_contradiction.md):

    python -m evaluation.self_contradiction generator=gemma3_270m topics=FILE release=DIR hydra.run.dir=D
    python -m evaluation.self_contradiction generator=qwen2_5_coder_0_5b_instruct topics=FILE release=DIR \
        mitigation=revise hydra.run.dir=D
    python -m evaluation.self_contradiction generator=none texts=FILE.jsonl release=DIR mitigation=delete hydra.run.dir=D
    python -m evaluation.self_contradiction generator=openai generator.base_url=URL generator.model=NAME \
        prompts=FILE release=DIR mitigation=revise hydra.run.dir=D

Writes D/generations.jsonl (every text, trigger and revise request with its answer, status and refusal),
D/pairs.jsonl (the scored pairs in the shared ChatProtect JSONL format: add "label" to train the scorer on them),
D/revised.jsonl ({"id", "text", "revised"} and what changed), D/metrics.json and D/report.html.
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
from models.progress import run_with_summary

log = logging.getLogger(__name__)
INPUTS = ("topics", "prompts", "texts", "pairs")


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


def write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def pair_rows(pairs: list[dict], generator_name: str | None, tag: str = "") -> list[dict]:
    """The scored pairs in the shared ChatProtect JSONL format (data_prep.chatprotect reads them back), with the
    scores and the aligned facts beside."""
    from models.self_contradiction.texts import detokenize

    out = []
    for p in pairs:
        out.append({"id": p["id"] + tag, "generator": generator_name, "prompt": p.get("prompt") or "",
                    "prefix": p.get("prefix") or "", "orig": detokenize(p["a_tokens"]), "alt": detokenize(p["b_tokens"]),
                    "kind": p["kind"], "text_id": p["text_id"], "sentence": p["sentence"], "other": p.get("other"),
                    "qa": {"question": p.get("question"), "answer": p.get("withheld"), "role": p.get("role")}
                    if p["kind"] == "trigger" else None,
                    "status": p["status"], "p_contradiction": p["p_contradiction"], "decision": p["decision"],
                    "basis": p.get("basis"), "conflicts": p.get("conflicts") or [],
                    # detect=judge: the trained scorer's probability and the judge's explanation beside its own
                    **({"p_scorer": p["p_scorer"], "explanation": p.get("explanation")} if "p_scorer" in p else {})})
    return out


def run(cfg: DictConfig, run_dir: Path) -> dict:
    from models.self_contradiction.components import load_scorer_components, model_paths
    from models.self_contradiction.loop import LoopSettings, generate_texts, self_contradiction_loop
    from models.self_contradiction.texts import detokenize
    from models.self_contradiction.trigger import TriggerSettings

    start = time.perf_counter()
    kind, rows, skipped = read_input(cfg)
    has_generator = bool(cfg.generator._target_)
    if not has_generator and kind in ("topics", "prompts"):
        raise DataFormatError(f"{kind}= needs a generator to write the texts (generator=gemma3_270m or generator=openai)")
    if not has_generator and cfg.mitigation == "revise":
        raise DataFormatError("mitigation=revise needs a generator (generator=gemma3_270m or generator=openai)")
    paths = model_paths(cfg.release, {k: cfg[k] for k in ("parser", "detector", "entailment", "contradiction")})
    generator = build_generator(cfg)
    # a chat model is asked with ChatProtect's prompts (conf/chat_prompts/), a base model with the cloze
    chat_prompts = hydra.utils.instantiate(cfg.chat_prompts) if getattr(generator, "chat", False) else None
    settings = LoopSettings(mitigation=str(cfg.mitigation), within=bool(cfg.within),
                            trigger=TriggerSettings(str(cfg.trigger.qas), str(cfg.trigger.template), chat_prompts),
                            rounds=int(cfg.revise.rounds), trigger_sampling=sampling_of(cfg.trigger.sampling),
                            revise_sampling=sampling_of(cfg.revise.sampling), perplexity=bool(cfg.perplexity))
    run_dir.mkdir(parents=True, exist_ok=True)

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
    if cfg.threshold is not None:
        scorer.threshold = float(cfg.threshold)
    result = self_contradiction_loop(rows, scorer, detector, parser, generator, settings)

    gen_name = getattr(generator, "name", None)
    write_jsonl(run_dir / "generations.jsonl",
                [{"kind": "text", **g} for g in generations] +
                [{"kind": "trigger", "id": r["id"], "request": r["request"], "text": r["generation"]["text"],
                  "status": r["generation"]["status"], "error": r["generation"]["error"],
                  "cached": r["generation"]["cached"], "refused": r.get("refused")} for r in result["requests"]] +
                [{"kind": "revise", **r} for r in result["revise_requests"]])
    write_jsonl(run_dir / "pairs.jsonl", pair_rows(result["pairs"], gen_name))
    fixes = result["fixes"]
    revised_rows = []
    for t, r, m in zip(result["texts"], result["revised"], result["per_text"]):
        changes = [{"sentence": f.index, "action": f.action, "reason": f.reason, "original": detokenize(f.original),
                    "revised": detokenize(f.revised) if f.revised else None, "pairs": f.pairs, "rounds": f.rounds}
                   for f in fixes if f.text_id == t.id]
        revised_rows.append({"id": t.id, "prompt": t.prompt, "text": t.text, "revised": r.text, "changes": changes,
                             **{k: m[k] for k in ("sentences", "self_contradictory", "self_contradiction_rate",
                                                  "informativeness_kept")}})
    write_jsonl(run_dir / "revised.jsonl", revised_rows)

    metrics = result["metrics"]
    metrics["steps"] = {**steps, **metrics["steps"]}
    for s in metrics["steps"].values():
        s.setdefault("per_second", round(s["items"] / s["seconds"], 3) if s["seconds"] else None)
    gen_errors = sum(g.get("status") == "error" for g in generations)
    metrics.update({"input": kind, "inputs": len(rows), "skipped_lines": skipped, "generator": gen_name,
                    "generator_is_chat": getattr(generator, "chat", None), "text_generation_errors": gen_errors,
                    "threshold": scorer.threshold, "models": paths,
                    "cache": {"hits": generator.cache.hits, "misses": generator.cache.misses} if generator else None,
                    "wall_seconds": round(time.perf_counter() - start, 2)})
    if generator is not None and "gemma3_270m" in str(gen_name):
        metrics["note"] = "figures from Gemma 3 270M, a weak base model: they test the loop, not a real model"
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1, ensure_ascii=False))
    wandb_run = init_wandb(cfg, "eval-self-contradiction", str(run_dir))  # the config as W&B sees it is masked
    if wandb_run is not None:
        wandb_run.log({k: v for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        wandb_run.finish()
    if cfg.html:
        from evaluation.self_contradiction_html import write_page

        write_page(result, metrics, run_dir / "report.html")
    log.info("self-contradiction: %d texts, %d sentences, rate %s, mitigation %s removed %s, informativeness kept %s",
             metrics["texts"], metrics["sentences"], metrics["self_contradiction_rate"], metrics["mitigation"],
             metrics["mitigation_removed"], metrics["informativeness_kept"])
    return metrics


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
