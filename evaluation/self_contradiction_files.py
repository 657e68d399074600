"""The files of a self-contradiction run (evaluation.self_contradiction): generations.jsonl, pairs.jsonl,
revised.jsonl, metrics.json and report.html. The one-process run and the merge of a sharded one (given texts) write
them with the same functions, so the same texts give the same bytes; given texts go through per-text rows (a shard's
rows.jsonl) either way."""
from __future__ import annotations

import json
from pathlib import Path

# what a run took, not what it found: run.json, so that metrics.json is the same bytes for the same texts
RUN_FIGURES = ("steps", "generator_usage", "cache", "wall_seconds")


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


def write_texts(result: dict, generations: list[dict], gen_name: str | None, run_dir: Path) -> None:
    """generations.jsonl, pairs.jsonl and revised.jsonl of the loop's result."""
    from models.self_contradiction.texts import detokenize

    run_dir.mkdir(parents=True, exist_ok=True)
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


def write_metrics(result: dict, metrics: dict, run_dir: Path, html: bool) -> None:
    """metrics.json (what the run found, never what it took: the same texts give the same bytes) and report.html."""
    (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=1, ensure_ascii=False))
    if html:
        from evaluation.self_contradiction_html import write_page

        write_page(result, metrics, run_dir / "report.html")


def with_facts(loop_figures: dict, facts: dict) -> dict:
    """metrics.json of given texts: the loop's figures (less RUN_FIGURES) and what the run was given."""
    return {**{k: v for k, v in loop_figures.items() if k not in RUN_FIGURES}, **facts}


def text_rows(result: dict, generations: list[dict]) -> list[dict]:
    """A shard's rows: one per text, everything the loop found for it as JSON (merge_outputs reads them back)."""
    from dataclasses import asdict

    def plain(t):
        return {**asdict(t), "changed": sorted(t.changed)}

    rows = []
    for g, t, r, m in zip(generations, result["texts"], result["revised"], result["per_text"]):
        rows.append({"id": t.id, "generation": g, "text": plain(t), "revised": plain(r), "per_text": m,
                     "pairs": [p for p in result["pairs"] if p["text_id"] == t.id],
                     "after": [p for p in result["after"] if p["text_id"] == t.id],
                     "fixes": [asdict(f) for f in result["fixes"] if f.text_id == t.id],
                     "still": sorted(i for tid, i in result["still"] if tid == t.id)})
    return rows


def write_text_rows(rows: list[dict], out_dir: Path, info: dict, html: bool) -> dict:
    """The files of given texts from their per-text rows (in input order): a one-process run and the merge of a
    sharded one both write them here, the loop's figures from the function the loop itself uses."""
    from models.self_contradiction.measures import loop_metrics
    from models.self_contradiction.mitigate import SentenceFix
    from models.self_contradiction.texts import AnalysedText

    def text(d):
        return AnalysedText(**{**d, "changed": set(d["changed"])})

    result = {"texts": [text(r["text"]) for r in rows], "revised": [text(r["revised"]) for r in rows],
              "pairs": [p for r in rows for p in r["pairs"]], "after": [p for r in rows for p in r["after"]],
              "fixes": [SentenceFix(**f) for r in rows for f in r["fixes"]], "requests": [], "revise_requests": [],
              "per_text": [r["per_text"] for r in rows]}
    figures = loop_metrics(result["per_text"], result["pairs"], result["after"], sum(len(r["still"]) for r in rows),
                           info["mitigation"])
    metrics = with_facts(figures, {**info["facts"], "inputs": len(rows)})
    write_texts(result, [r["generation"] for r in rows], None, out_dir)
    write_metrics(result, metrics, out_dir, html)
    return metrics
