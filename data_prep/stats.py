"""Counts of a set of canonical records, and the table that `data_prep.build` prints."""
from __future__ import annotations


def record_stats(records: list[dict], n_sentences: int | None, skipped) -> dict:
    """sentences (all sentences of the release split, also those without a predicate, when the
    reader knows them), predicates, questions (distinct questions per predicate), skipped."""
    return {
        "sentences": n_sentences if n_sentences is not None else len({r["sentence_id"] for r in records}),
        "predicates": len(records),
        "questions": sum(len({qa["question"] for qa in r["qas"]}) for r in records),
        "skipped": dict(sorted(skipped.items())),
        "kept_after_repair": dict(sorted(getattr(skipped, "kept", {}).items())),
        "skip_examples": getattr(skipped, "examples", {}),  # the first few file:line of each reason
    }


def stats_table(stats: dict) -> str:
    rows = [("source", "split", "sentences", "predicates", "questions", "skipped")]
    for source, splits in stats.items():
        for split, s in splits.items():
            skipped = ", ".join(f"{k}={v}" for k, v in s.get("skipped", {}).items()) or "-"
            rows.append((source, split, f"{s['sentences']:,}", f"{s['predicates']:,}", f"{s['questions']:,}", skipped))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i < 2 or i == 5 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
