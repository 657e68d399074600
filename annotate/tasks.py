"""Annotation items from a task file: the benchmark's JSONL, the consistency CLI's reports.jsonl, or plain
pairs {"id", "reference", "generated"} parsed on the fly by a release's pipeline (serve's `release=`).

An item is one response (reference + generated text) with its QAs and answer spans:
    {"item_id", "dataset", "reference": [tokens], "generated": [[sentence tokens]],
     "qas": [{"qa_id", "sent", "start", "end", "predicate_idx", "predicate", "question", "answer",
              "suggestion"}],
     "spans": [{"span_id", "start", "end", "qa_ids"}],
     "row": the benchmark row to export (its votes removed)}
Offsets (`start`/`end` end-exclusive, `predicate_idx`) index the generated sentences concatenated, as
the benchmark's do. `suggestion` is the model's P(supported) (reports only), kept apart from any vote.

Item ids are stable: a benchmark row is `dataset:source_id:model` (data_prep.consistency.response_id),
a report `report:<its id>`. The whole file is checked before anything is returned: the first bad line
raises TaskFileError naming file:line, so a bad file imports nothing.

A report carries no reference text (the pipeline drops it): the reference comes from the report's own
`reference` field when present, else from the pairs file the report was made from (`references=`,
matched by `id`).
"""
from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from data_prep.consistency import Skipped, answer_span, flatten_summary, premise_tokens, response_id

log = logging.getLogger(__name__)


class TaskFileError(ValueError):
    """A task file that cannot be imported; the message names the file and line."""


class NothingToAnnotate(Skipped):
    """A well-formed line with no QA to show (a report whose sentences had no predicate, say): left out and
    logged, not an error."""


def file_digest(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def task_lines(path):
    """(line number, JSON object) of every non-blank line; TaskFileError naming file:line otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFileError(f"{path}: no such task file") from None
    except UnicodeDecodeError as e:
        raise TaskFileError(f"{path}: not UTF-8 ({e})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskFileError(f"{path}:{lineno}: not valid JSON ({e.msg}, column {e.colno})") from None
        if not isinstance(row, dict):
            raise TaskFileError(f"{path}:{lineno}: expected a JSON object")
        yield lineno, row


def _str(x, what: str) -> str:
    if not isinstance(x, str) or not x.strip():
        raise Skipped(f"{what} is missing or empty")
    return x


def benchmark_item(row: dict) -> dict:
    """The item of one benchmark line; Skipped(reason) when it cannot be annotated."""
    reference = premise_tokens(row.get("source"))
    if not reference:
        raise Skipped("empty reference ('source')")
    try:
        flat, offsets = flatten_summary(row.get("summary"))
    except ValueError:
        raise Skipped("'summary' mixes strings and token lists") from None
    if not flat:
        raise Skipped("empty generated text ('summary')")
    sentences = [flat[a:b] for a, b in zip(offsets, offsets[1:] + [len(flat)])]
    qas, ids = [], set()
    for k, qa in enumerate(row.get("qas") or []):
        if not isinstance(qa, dict) or "qa_id" not in qa:
            raise Skipped(f"qa {k}: not an object with a qa_id")
        if qa["qa_id"] in ids:
            raise Skipped(f"qa {k}: qa_id {qa['qa_id']} repeated")
        ids.add(qa["qa_id"])
        try:
            start, end = answer_span(qa, len(flat))
        except Skipped as e:
            raise Skipped(f"qa {qa['qa_id']}: {e.reason}") from None
        pred = qa.get("predicate_idx")
        qas.append({"qa_id": qa["qa_id"], "sent": max(i for i, o in enumerate(offsets) if o <= start),
                    "start": start, "end": end, "predicate_idx": pred if isinstance(pred, int) else -1,
                    "predicate": str(qa.get("predicate", "")), "question": _str(qa.get("question"), "question"),
                    "answer": _str(qa.get("answer"), "answer"), "suggestion": None})
    if not qas:
        raise NothingToAnnotate("no QAs")
    spans = []
    for k, s in enumerate(row.get("spans") or []):
        try:
            start, end = int(s["start"]), int(s["end"])
            sid = s["id"]
        except (KeyError, TypeError, ValueError):
            raise Skipped(f"span {k}: needs id, start and end") from None
        # the release lists some QA ids that its qas do not hold: kept in the export, not shown
        spans.append({"span_id": sid, "start": start, "end": end,
                      "qa_ids": [q for q in s.get("qaIds") or [] if q in ids]})
    # the votes are blanked, not removed: the export puts its own back at the same place in the key order
    export = dict(row)
    export["qas"] = [{k: (None if k == "annotations" else v) for k, v in qa.items()} for qa in row["qas"]]
    export["spans"] = [{k: (None if k == "annotations" else v) for k, v in s.items()} for s in row.get("spans") or []]
    return {"item_id": response_id(row), "dataset": str(row.get("dataset")), "reference": reference,
            "generated": sentences, "qas": qas, "spans": spans, "row": export}


def report_item(rep: dict, reference) -> dict:
    """The item of one consistency report (models/consistency/pipeline.py) and its reference text."""
    from models.text import as_tokens

    ref = as_tokens(reference)
    if not ref:
        raise Skipped("no reference text (neither the report's 'reference' nor the pairs file's)")
    sentences = [[str(t) for t in s.get("tokens") or []] for s in rep.get("sentences") or []]
    offsets = [sum(map(len, sentences[:j])) for j in range(len(sentences))]
    qas, spans, out_qas = [], {}, []
    for j, sent in enumerate(rep.get("sentences") or []):
        for p in sent.get("predicates") or []:
            for qa in p.get("qas") or []:
                span = qa.get("answer_span")
                if not (isinstance(span, list) and len(span) == 2 and 0 <= span[0] < span[1] <= len(sentences[j])):
                    continue  # an answer the parser could not place in the sentence cannot be shown
                qid = len(qas)
                start, end = offsets[j] + span[0], offsets[j] + span[1]
                pi = p.get("predicate_index")
                pidx = offsets[j] + pi if isinstance(pi, int) and 0 <= pi < len(sentences[j]) else -1
                score = qa.get("score")
                qas.append({"qa_id": qid, "sent": j, "start": start, "end": end, "predicate_idx": pidx,
                            "predicate": str(p.get("predicate", "")), "question": _str(qa.get("question"), "question"),
                            "answer": _str(qa.get("answer"), "answer"),
                            "suggestion": float(score) if isinstance(score, (int, float)) else None})
                spans.setdefault((start, end), []).append(qid)
                out_qas.append({"qa_id": qid, "sent_id": j, "predicate_idx": pidx,
                                "predicate_pos": "NOUN" if p.get("predicate_type") == "nominal" else "VERB",
                                "predicate": qas[-1]["predicate"], "question": qas[-1]["question"],
                                "answer_idx": f"{start}-{end}", "answer": qas[-1]["answer"]})
    if not qas:
        raise NothingToAnnotate("no QA with an answer span")
    span_list = [{"span_id": k, "start": s, "end": e, "qa_ids": ids} for k, ((s, e), ids) in enumerate(spans.items())]
    dataset = str(rep.get("dataset") or "generated")
    row = {"source_id": rep["id"], "source": ref, "summary": sentences, "model": rep.get("model"),
           "datasource": "consistency_report", "dataset": dataset, "qas": out_qas,
           "spans": [{"id": s["span_id"], "start": s["start"], "end": s["end"], "qaIds": s["qa_ids"]}
                     for s in span_list]}
    return {"item_id": f"report:{rep['id']}", "dataset": dataset, "reference": ref, "generated": sentences,
            "qas": qas, "spans": span_list, "row": row}


def _references(path) -> dict:
    """{pair id: reference} from the pairs JSONL the consistency CLI read."""
    out = {}
    for lineno, row in task_lines(path):
        out[str(row.get("id", f"{Path(path).stem}:{lineno}"))] = row.get("reference")
    return out


def load_tasks(path: str | Path, references: str | Path | None = None, parse=None) -> list[dict]:
    """Every item of the task file, in file order; TaskFileError naming file:line on the first bad line. A line
    with nothing to annotate is left out with a warning naming it. parse: pairs -> consistency reports (a
    release's ConsistencyPipeline.run), for plain pair lines; they are parsed together once the whole file
    has been checked."""
    path = Path(path)
    refs = _references(references) if references else {}
    entries, seen = [], {}  # an item, or (where, pair) for a plain pair still to parse
    for lineno, row in task_lines(path):
        where = f"{path}:{lineno}"
        try:
            if "qas" in row and "source" in row:
                entry = benchmark_item(row)
            elif "sentences" in row and "id" in row:
                entry = report_item(row, row.get("reference", refs.get(str(row["id"]))))
            elif {"id", "reference", "generated"} <= set(row):
                if parse is None:
                    raise Skipped("a plain pair (id, reference, generated): give release=DIR to parse it on the fly")
                entry = (where, row)
            else:
                raise Skipped("neither a benchmark line (source, summary, qas), a consistency report (id, sentences) "
                              "nor a pair (id, reference, generated)")
        except NothingToAnnotate as e:
            log.warning("%s: left out: %s", where, e.reason)
            continue
        except Skipped as e:
            raise TaskFileError(f"{where}: {e.reason}") from None
        item_id = f"report:{row['id']}" if isinstance(entry, tuple) else entry["item_id"]
        if item_id in seen:
            raise TaskFileError(f"{where}: item id {item_id} repeats line {seen[item_id]}")
        seen[item_id] = lineno
        entries.append(entry)
    pending = [e for e in entries if isinstance(e, tuple)]
    parsed = dict(zip((id(e) for e in pending), parse([row for _, row in pending]))) if pending else {}
    items = []
    for entry in entries:
        if isinstance(entry, tuple):
            where, row = entry
            try:
                entry = report_item(parsed[id(entry)], row["reference"])
            except NothingToAnnotate as e:
                log.warning("%s: left out: %s", where, e.reason)
                continue
            except Skipped as e:
                raise TaskFileError(f"{where}: {e.reason}") from None
        items.append(entry)
    if not items:
        raise TaskFileError(f"{path}: no items")
    return items


def by_uncertainty(items: list[dict]) -> list[dict]:
    """The items, the ones the model is least sure about first (mean of 1 - 2|P(supported) - 0.5| over their
    QAs); items without a suggestion keep their order, after the others."""
    def key(item):
        ps = [q["suggestion"] for q in item["qas"] if q.get("suggestion") is not None]
        return (not ps, -sum(1 - 2 * abs(p - 0.5) for p in ps) / len(ps) if ps else 0.0)

    return sorted(items, key=key)
