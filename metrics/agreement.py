"""Inter-annotator agreement on QASemConsistency votes (Cattan et al., Table 3).

Input: responses in the benchmark's JSONL shape, `dataset`, `qas[{predicate_idx, annotations}]`,
`spans[{annotations}]`, with the release's polarities (QA vote 1 = NOT supported, span vote 1 =
covered). Fleiss' kappa is statsmodels' (a maintained implementation, not ours); this module only
builds its subject x category table and the counts around it.

Figures per dataset and `overall`:
- qa_kappa / span_kappa: Fleiss' kappa over the QAs' / spans' votes (subjects with the modal number
  of votes only: Fleiss assumes every subject has as many raters; the others are counted in
  `qas_uneven` / `spans_uneven`);
- unanimous: share of QAs whose votes all agree; unanimous_spans likewise;
- mixed_predicates: share of predicates (response, predicate_idx) whose QAs' majority labels are
  both supported and not supported (the paper: 27%);
- items (responses), qas, spans, predicates, not_supported (share of QAs whose majority says 1).
"""
from __future__ import annotations

from collections import Counter, defaultdict

DATASET_ORDER = ("cliff", "factscore", "verifiability")
DISPLAY = {"cliff": "CLIFF", "factscore": "FActScore", "verifiability": "Verifiability", "overall": "overall"}


def valid_votes(votes) -> bool:
    return isinstance(votes, list) and bool(votes) and all(v in (0, 1) and not isinstance(v, bool) for v in votes)


def majority(votes: list[int]) -> int | None:
    """1 when more than half the votes are 1, 0 when fewer; None on a tie or no votes."""
    ones = sum(votes)
    if not votes or 2 * ones == len(votes):
        return None
    return int(2 * ones > len(votes))


def fleiss_kappa(vote_lists: list[list[int]]) -> tuple[float | None, int]:
    """(Fleiss' kappa of binary votes, subjects left out). Only subjects with the most common number of
    votes (and at least two) enter; kappa is None when fewer than two subjects do or every vote is
    the same category (kappa undefined: no disagreement is expected or seen)."""
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    sizes = Counter(len(v) for v in vote_lists if len(v) >= 2)
    if not sizes:
        return None, len(vote_lists)
    n = sizes.most_common(1)[0][0]
    table = [[n - sum(v), sum(v)] for v in vote_lists if len(v) == n]
    left_out = len(vote_lists) - len(table)
    ones = sum(r[1] for r in table)
    if len(table) < 2 or ones in (0, n * len(table)):
        return None, left_out
    return float(sm_fleiss(table, method="fleiss")), left_out


def _unanimous(vote_lists) -> float | None:
    return sum(len(set(v)) == 1 for v in vote_lists) / len(vote_lists) if vote_lists else None


def _figures(responses: list[dict]) -> dict:
    qa_votes, span_votes, preds, not_supported = [], [], defaultdict(set), 0
    for ri, r in enumerate(responses):
        for qa in r.get("qas") or []:
            votes = qa.get("annotations")
            if not valid_votes(votes):
                continue
            qa_votes.append(votes)
            label = majority(votes)
            not_supported += label == 1
            if label is not None:  # a predicate is mixed when its QAs' majority labels differ
                preds[(ri, qa.get("sent_id"), qa.get("predicate_idx"))].add(label)
        span_votes += [s["annotations"] for s in r.get("spans") or [] if valid_votes(s.get("annotations"))]
    qa_k, qa_out = fleiss_kappa(qa_votes)
    span_k, span_out = fleiss_kappa(span_votes)
    return {"qa_kappa": qa_k, "span_kappa": span_k, "unanimous": _unanimous(qa_votes),
            "unanimous_spans": _unanimous(span_votes),
            "mixed_predicates": sum(len(s) > 1 for s in preds.values()) / len(preds) if preds else None,
            "items": len(responses), "qas": len(qa_votes), "spans": len(span_votes), "predicates": len(preds),
            "not_supported": not_supported / len(qa_votes) if qa_votes else None,
            "qas_uneven": qa_out, "spans_uneven": span_out}


def agreement(responses: list[dict]) -> dict:
    """{dataset: figures, ..., "overall": figures} for benchmark-shaped responses (see the module doc);
    datasets in the paper's order, then any other in order of appearance."""
    by = defaultdict(list)
    for r in responses:
        by[str(r.get("dataset"))].append(r)
    names = [d for d in DATASET_ORDER if d in by] + [d for d in by if d not in DATASET_ORDER]
    out = {d: _figures(by[d]) for d in names}
    out["overall"] = _figures(responses)
    return out


def majority_labels(responses: list[dict]) -> list[dict]:
    """One row per QA: its response's position, qa_id, votes and majority (1 = not supported, None on a tie)."""
    return [{"response": ri, "dataset": r.get("dataset"), "qa_id": qa.get("qa_id"), "votes": qa.get("annotations"),
             "majority": majority(qa["annotations"]) if valid_votes(qa.get("annotations")) else None}
            for ri, r in enumerate(responses) for qa in r.get("qas") or []]


def table(figures: dict) -> str:
    """A plain-text table of `agreement()`'s output, one row per dataset."""
    def f(x, pct=False):
        return "  n/a" if x is None else (f"{100 * x:5.1f}" if pct else f"{x:5.3f}")

    rows = [f"{'dataset':<14}{'items':>6}{'QAs':>6}{'QA k':>7}{'span k':>8}{'unan%':>7}{'mixed%':>8}{'notsup%':>9}"]
    for name, x in figures.items():
        rows.append(f"{DISPLAY.get(name, name):<14}{x['items']:>6}{x['qas']:>6}{f(x['qa_kappa']):>7}"
                    f"{f(x['span_kappa']):>8}{f(x['unanimous'], True):>7}{f(x['mixed_predicates'], True):>8}"
                    f"{f(x['not_supported'], True):>9}")
    return "\n".join(rows)
