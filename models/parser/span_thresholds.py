"""The span parser's decoding thresholds, chosen on dev: at every evaluation of a training run
(train.parser) and again on every dev predicate (evaluation.parser_ensemble)."""
from __future__ import annotations

from metrics.qasrl import evaluate_records
from models.parser.span import PREDICATE_TYPES

THRESHOLDS = [round(0.05 * k, 2) for k in range(1, 20)]  # 0.05 .. 0.95


def choose_thresholds(parser, records, probs, templates, encs) -> tuple[dict[str, float], float]:
    """(the threshold of each predicate type with the best UA F1 on that type's dev records alone,
    the best single threshold over all of them). Nominal predicates have fewer, sparser arguments
    than verbs: one threshold cannot serve both. A type absent from dev gets the single one."""
    def best(idx):
        sub = [[x[i] for i in idx] for x in (records, probs, templates, encs)]
        scored = [(evaluate_records(sub[0], parser.to_records(*sub, t)[0])["ua"]["f1"], -t, t) for t in THRESHOLDS]
        return max(scored)[2]

    every = list(range(len(records)))
    overall = best(every)
    out = {}
    for kind in PREDICATE_TYPES:
        idx = [i for i, r in enumerate(records) if (r.get("predicate_type") or "verbal") == kind]
        out[kind] = best(idx) if idx else overall
    return out, overall
