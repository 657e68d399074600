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


def missing_labels(item: dict, labels: dict) -> list[tuple[str, str]]:
    """What the annotator still has to answer, as (kind, target) keys, e.g. [("span", "3"), ("qa", "7")]."""
    return ([("span", s) for s, v in span_votes(item, labels).items() if v is None]
            + [("qa", q) for q, v in qa_votes(item, labels).items() if v is None])


def predicate_groups(item: dict) -> list[tuple[int, str, list[dict]]]:
    """Step 2's lists: (predicate index, predicate, its QAs), the predicates in the order they first appear."""
    groups: dict[tuple, list] = {}
    for q in item["qas"]:
        groups.setdefault((q["predicate_idx"], q["predicate"]), []).append(q)
    return [(pidx, pred, qas) for (pidx, pred), qas in groups.items()]


def row_numbers(item: dict) -> dict[tuple[str, str], tuple[str, int]]:
    """{(kind, target): (the list's name, the row's number in it, from 1)} as the page numbers its rows: the QA
    check and step 1 each one list, step 2 one list per predicate. Messages name rows this way, never by id."""
    out = {("check", str(q["qa_id"])): ("QA check", i) for i, q in enumerate(item["qas"], 1)}
    out.update({("span", str(s["span_id"])): ("step 1", i) for i, s in enumerate(item["spans"], 1)})
    for g, (_, pred, qas) in enumerate(predicate_groups(item), 1):
        out.update({("qa", str(q["qa_id"])): (f"step 2, predicate {g} ({pred})", i) for i, q in enumerate(qas, 1)})
    return out


def row_name(item: dict, kind: str, target) -> str:
    """One row as the page numbers it, e.g. "step 1 row 3"."""
    where, n = row_numbers(item).get((kind, str(target)), (kind, target))
    return f"{where} row {n}"


def describe_rows(item: dict, keys) -> str:
    """Rows as the page numbers them, every one of them, by list: "step 1 rows 1, 3; step 2, predicate 1
    (approved) rows 1, 5, 10"."""
    numbers, by_list = row_numbers(item), {}
    for key in keys:
        where, n = numbers.get((key[0], str(key[1])), (key[0], key[1]))
        by_list.setdefault(where, []).append(str(n))
    return "; ".join(f"{where} row{'s' if len(ns) > 1 else ''} {', '.join(ns)}" for where, ns in by_list.items())


def export_row(item: dict, annotator_labels: list[dict]) -> dict:
    """The item's benchmark row with one vote per annotator (in the order given) on every QA and span.
    QAs or spans the release lists but the app never showed (ids its qas lack) keep no votes: []."""
    row = dict(item["row"])
    qa = [qa_votes(item, lab) for lab in annotator_labels]
    sp = [span_votes(item, lab) for lab in annotator_labels]
    row["qas"] = [{**q, "annotations": [v[str(q["qa_id"])] for v in qa]} for q in row["qas"]]
    row["spans"] = [{**s, "annotations": [v.get(str(s["id"])) for v in sp]} for s in row["spans"]]
    return row
