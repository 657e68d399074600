"""One annotator's labels on one item -> their votes, in the benchmark's polarities; and the export row.

The protocol decides the votes the annotator was not asked for:
- a QA dropped in the optional check votes 1 (not supported: a nonsensical QA states nothing the
  reference supports);
- a QA under a span marked not covered votes 1 (step 1 makes it unsupported without asking);
- a span all of whose QAs were dropped votes 0 (nothing of it was judged covered).
An explicit QA label wins otherwise (the importer stores the release's votes as they are, including
the 4 of 7,014 where a QA under an uncovered span was voted supported; the app never writes such a
pair: marking a span not covered clears the QA labels under it, annotate/store.py).
"""
from __future__ import annotations


def qa_votes(item: dict, labels: dict) -> dict[str, int | None]:
    """{qa_id (str): 1 not supported / 0 supported / None not answered yet}."""
    uncovered = {str(q) for s in item["spans"] if labels["span"].get(str(s["span_id"])) == 0 for q in s["qa_ids"]}
    out = {}
    for qa in item["qas"]:
        q = str(qa["qa_id"])
        if q in labels["qa"]:
            out[q] = labels["qa"][q]
        elif labels["check"].get(q) == 1 or q in uncovered:
            out[q] = 1
        else:
            out[q] = None
    return out


def span_votes(item: dict, labels: dict) -> dict[str, int | None]:
    """{span_id (str): 1 covered / 0 not covered / None not answered yet}."""
    out = {}
    for s in item["spans"]:
        sid = str(s["span_id"])
        all_dropped = bool(s["qa_ids"]) and all(labels["check"].get(str(q)) == 1 for q in s["qa_ids"])
        out[sid] = labels["span"].get(sid, 0 if all_dropped else None)
    return out


def missing_labels(item: dict, labels: dict) -> list[str]:
    """What the annotator still has to answer, e.g. ["span 3", "qa 7"]."""
    return ([f"span {s}" for s, v in span_votes(item, labels).items() if v is None]
            + [f"qa {q}" for q, v in qa_votes(item, labels).items() if v is None])


def export_row(item: dict, annotator_labels: list[dict]) -> dict:
    """The item's benchmark row with one vote per annotator (in the order given) on every QA and span.
    QAs or spans the release lists but the app never showed (ids its qas lack) keep no votes: []."""
    row = dict(item["row"])
    qa = [qa_votes(item, lab) for lab in annotator_labels]
    sp = [span_votes(item, lab) for lab in annotator_labels]
    row["qas"] = [{**q, "annotations": [v[str(q["qa_id"])] for v in qa]} for q in row["qas"]]
    row["spans"] = [{**s, "annotations": [v.get(str(s["id"])) for v in sp]} for s in row["spans"]]
    return row
