"""The loop's measures, per text and per run (fractions in [0, 1], None when there is nothing to divide):
- self_contradiction_rate: sentences judged in at least one detected self-contradiction / sentences;
- mitigation_removed: of those sentences, the share dropped, or changed and no longer detected when their pairs
  are detected again on the revised text; removed_by_deletion (dropped, a revision still conflicting after its
  rounds included) and removed_by_revision (changed, by the model or by removing the conflicting modifier, and no
  longer detected) split it, both as shares of the same detected sentences;
- informativeness_kept: the text's QAs that were not in conflict and survive in the revised text, matched by
  predicate, role and answer (a dropped sentence keeps none);
- perplexity of the original and revised texts under the generator, when it gives log-probabilities."""
from __future__ import annotations

import math


def qa_key(q: dict) -> tuple:
    return q["verb_form"], q["predicate_type"], q["role"], " ".join(q["answer"].lower().split())


def conflicting_qa_keys(pairs: list[dict]) -> set[tuple]:
    """(text id, sentence, answer span, question) of the QA each flagged pair names as its (primary) conflict."""
    return {(p["text_id"], p["sentence"], tuple(c["a"]["span"]), c["a"]["question"])
            for p in pairs if p.get("decision") and p.get("conflicts") for c in p["conflicts"][:1]}


def informativeness(text, revised_qas: list[list[dict] | None], conflicting: set[tuple]) -> tuple[int, int]:
    """(non-conflicting QAs of the original text, how many of them the revised text still states)."""
    total = kept = 0
    for i, qas in enumerate(text.qas):
        after = {qa_key(q) for q in revised_qas[i] or []}
        for q in qas:
            if (text.id, i, tuple(q["answer_span"]), q["question"]) in conflicting:
                continue
            total += 1
            kept += qa_key(q) in after
    return total, kept


def ratio(a, b):
    return a / b if b else None


def perplexity(values) -> float | None:
    """exp(mean negative log-likelihood per token) over (sum of log-probs, tokens) pairs; None without any."""
    values = [v for v in values if v]
    n = sum(v[1] for v in values)
    return math.exp(-sum(v[0] for v in values) / n) if n else None


def run_measures(per_text: list[dict], ppl_original=None, ppl_revised=None) -> dict:
    """The run's figures from the per-text counts (see loop.text_measures)."""
    tot = {k: sum(t[k] for t in per_text) for k in ("sentences", "self_contradictory", "removed", "removed_by_deletion",
                                                      "removed_by_revision", "qas_nonconflicting", "qas_kept", "dropped",
                                                      "edited", "revised")}
    return {"texts": len(per_text), "sentences": tot["sentences"],
            "self_contradictory_sentences": tot["self_contradictory"],
            "self_contradiction_rate": ratio(tot["self_contradictory"], tot["sentences"]),
            "mitigation_removed": ratio(tot["removed"], tot["self_contradictory"]),
            "removed_by_revision": ratio(tot["removed_by_revision"], tot["self_contradictory"]),
            "removed_by_deletion": ratio(tot["removed_by_deletion"], tot["self_contradictory"]),
            "informativeness_kept": ratio(tot["qas_kept"], tot["qas_nonconflicting"]),
            "qas_nonconflicting": tot["qas_nonconflicting"], "qas_kept": tot["qas_kept"],
            "sentences_dropped": tot["dropped"], "sentences_edited": tot["edited"], "sentences_revised": tot["revised"],
            "perplexity_original": ppl_original, "perplexity_revised": ppl_revised,
            "perplexity_change": None if ppl_original is None or ppl_revised is None else ppl_revised - ppl_original}


def loop_metrics(per_text: list[dict], pairs: list[dict], after: list[dict], still_flagged: int, mitigation: str,
                 trig_counts: dict | None = None, revise_counts: dict | None = None, after_counts: dict | None = None,
                 ppl=(None, None), sentence_ppl: dict | None = None) -> dict:
    """The run's figures from what the loop found per text and pair: the loop calls it, and so does the merge of a
    sharded run (evaluation.self_contradiction.merge_outputs), so both give the same figures for the same texts."""
    revise_counts = revise_counts or {}
    metrics = run_measures(per_text, *ppl)
    metrics.update({
        "mitigation": mitigation,
        "pairs": {"within": sum(p["kind"] == "within" for p in pairs), "trigger": sum(p["kind"] == "trigger" for p in pairs),
                  "flagged": sum(bool(p.get("decision")) for p in pairs),
                  "unscored": sum(p.get("p_contradiction") is None for p in pairs),
                  "statuses": {s: sum(p["status"] == s for p in pairs) for s in sorted({p["status"] for p in pairs})}},
        "alternatives": trig_counts or None,
        "alternatives_refused": (trig_counts or {}).get("refused", {}),
        "alternatives_refused_total": sum((trig_counts or {}).get("refused", {}).values()),
        "revisions_refused": revise_counts.get("refused", {}),
        "revisions_asked": len(revise_counts.get("requests", [])),
        "revisions_accepted": revise_counts.get("accepted", {}),  # fact: by source (draft: the rule-made draft; model)
        "redetect": {"pairs": len(after), "still_flagged_sentences": still_flagged, "alternatives": after_counts or None},
        "perplexity_changed_sentences": sentence_ppl,
    })
    if mitigation == "none":
        metrics.update(mitigation_removed=None, removed_by_revision=None, removed_by_deletion=None)
    return metrics
