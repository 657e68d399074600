"""How well each annotator does, for the admin page:
- against the others: on the QAs of items that at least two others also submitted, how often their vote is
  the majority of the others' votes (ties left out). A spammer or a misread instruction shows as a low
  share long before the campaign ends;
- on gold items (`gold=FILE`, a benchmark-format file with votes for some of the task items): how often
  their vote is the gold majority."""
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


def read_gold(path) -> dict[str, dict[str, int]]:
    """{item_id: {qa_id: majority vote}} from a benchmark-format file with votes (ties left out)."""
    from annotate.tasks import task_lines
    from data_prep.consistency import response_id

    gold = {}
    for _, row in task_lines(path):
        labels = {str(q["qa_id"]): majority(q.get("annotations") or []) for q in row.get("qas") or []}
        gold[response_id(row)] = {q: v for q, v in labels.items() if v is not None}
    return gold


def gold_accuracy(store: Store, gold: dict[str, dict[str, int]]) -> dict[int, dict]:
    """{annotator_id: {"qas": gold QAs answered, "agree": share equal to the gold label}} over submitted items."""
    items = store.items()
    counts: dict[int, list[int]] = {}
    for item_id, labels in store.finished_votes().items():
        if item_id not in gold:
            continue
        for lab in labels:
            c = counts.setdefault(lab["annotator_id"], [0, 0])
            for qa, v in qa_votes(items[item_id], lab).items():
                if v is not None and qa in gold[item_id]:
                    c[0] += 1
                    c[1] += v == gold[item_id][qa]
    return {a: {"qas": n, "agree": ok / n if n else None} for a, (n, ok) in counts.items()}
