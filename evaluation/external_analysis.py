"""Where the score fails on a minimal-edit benchmark (SummEdits: each record keeps its original summary and
the kinds of its edit): which words an edit changed, whether a QA of the summary covers them (its answer
span or its predicate holds a changed word), the P(supported) of that QA against the summary's other QAs,
how many QAs of the consistent (paraphrased) summaries fall under the threshold, and the AUC by document
length. A function of the records and the pipeline's reports alone."""
from __future__ import annotations

import difflib
from collections import defaultdict

import numpy as np

from metrics.entailment import roc_auc
from models.text import tokenize_sentences

LENGTH_BINS = ((0, 300), (300, 1000), (1000, None))


def changed_positions(report: dict, original: str) -> set[tuple[int, int]]:
    """(sentence, token) of the summary's words that differ from the original summary's."""
    flat = [(s["index"], i, t) for s in report["sentences"] for i, t in enumerate(s["tokens"])]
    orig = [t for s in tokenize_sentences(original or "") for t in s]
    ops = difflib.SequenceMatcher(a=orig, b=[t for _, _, t in flat], autojunk=False).get_opcodes()
    return {(flat[k][0], flat[k][1]) for tag, _, _, j1, j2 in ops if tag != "equal" for k in range(j1, j2)}


def qa_rows(report: dict, changed: set) -> list[tuple[float, bool]]:
    """(P, covers a changed word) of every scored QA."""
    out = []
    for s in report["sentences"]:
        for p in s["predicates"]:
            for qa in p["qas"]:
                if qa.get("score") is None:
                    continue
                span = qa.get("answer_span") or [0, 0]
                words = {(s["index"], i) for i in range(span[0], span[1])} | {(s["index"], p["predicate_index"])}
                out.append((float(qa["score"]), bool(words & changed)))
    return out


def _mean(xs):
    return float(np.mean(xs)) if xs else None


def edit_analysis(rows: list[dict], reports: list[dict], predictions: list[dict], threshold: float, score: str) -> dict:
    """The failure tables of a benchmark whose records carry `original_summary` and `edit_types`."""
    by_type = defaultdict(lambda: {"n": 0, "covered": 0, "p_covering": [], "p_others": [], "covering_below": 0,
                                   "covering_qas": 0})
    paraphrase = {"summaries": 0, "qas": 0, "below": 0, "changed_qas": 0, "changed_below": 0}
    for row, rep in zip(rows, reports):
        changed = changed_positions(rep, row["extra"].get("original_summary"))
        qas = qa_rows(rep, changed)
        if row["target"] == 1:
            paraphrase["summaries"] += 1
            paraphrase["qas"] += len(qas)
            paraphrase["below"] += sum(p < threshold for p, _ in qas)
            paraphrase["changed_qas"] += sum(c for _, c in qas)
            paraphrase["changed_below"] += sum(c and p < threshold for p, c in qas)
            continue
        for kind in row["extra"].get("edit_types") or ["unnamed"]:
            t = by_type[kind]
            t["n"] += 1
            covering = [p for p, c in qas if c]
            t["covered"] += bool(covering)
            t["covering_qas"] += len(covering)
            t["covering_below"] += sum(p < threshold for p in covering)
            t["p_covering"] += covering
            t["p_others"] += [p for p, c in qas if not c]
    edits = {k: {"n": t["n"], "covered_share": t["covered"] / t["n"], "p_covering_qa": _mean(t["p_covering"]),
                 "p_other_qas": _mean(t["p_others"]),
                 "covering_below_threshold": t["covering_below"] / t["covering_qas"] if t["covering_qas"] else None}
             for k, t in sorted(by_type.items())}
    para = {**paraphrase, "below_share": paraphrase["below"] / paraphrase["qas"] if paraphrase["qas"] else None,
            "changed_below_share": paraphrase["changed_below"] / paraphrase["changed_qas"]
            if paraphrase["changed_qas"] else None}
    lengths, words = {}, [len(r["document"].split()) for r in rows]
    for lo, hi in LENGTH_BINS:
        idx = [i for i, n in enumerate(words) if n >= lo and (hi is None or n < hi)]
        kept = [i for i in idx if predictions[i][score] is not None]
        name = f"{lo}-{hi}" if hi else f"{lo}+"
        lengths[name] = {"n": len(idx), "auc": roc_auc([rows[i]["target"] for i in kept],
                                                       [predictions[i][score] for i in kept]) if kept else None,
                         "auc_word_overlap": roc_auc([rows[i]["target"] for i in idx],
                                                     [predictions[i]["word_overlap"] for i in idx]) if idx else None}
    return {"edit_types": edits, "consistent_summaries": para, "document_words": lengths}
