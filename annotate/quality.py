"""Each annotator against the others: on the QAs of items that at least two others also submitted, how often
their vote is the majority of the others' votes (ties left out). A spammer or a misread instruction shows
as a low share long before the campaign ends; the admin page lists it."""
from __future__ import annotations

from annotate.store import Store
from annotate.votes import qa_votes
from metrics.agreement import majority


def agreement_with_others(store: Store) -> dict[int, dict]:
    """{annotator_id: {"qas": compared, "agree": share or None}}."""
    items = store.items()
    counts: dict[int, list[int]] = {}
    for item_id, labels in store.finished_votes().items():
        if len(labels) < 3:
            continue
        votes = [qa_votes(items[item_id], lab) for lab in labels]
        for k, lab in enumerate(labels):
            c = counts.setdefault(lab["annotator_id"], [0, 0])
            for qa, v in votes[k].items():
                others = majority([vs[qa] for j, vs in enumerate(votes) if j != k and vs[qa] is not None])
                if v is not None and others is not None:
                    c[0] += 1
                    c[1] += v == others
    return {a: {"qas": n, "agree": ok / n if n else None} for a, (n, ok) in counts.items()}
