"""Reader of the QASemConsistency benchmark (Cattan et al. 2024) into QA-entailment examples.

One JSONL line per response: `source` (reference tokens), `summary` (the generated text: a list
of sentence token lists for cliff / factscore, a flat token list for verifiability), `dataset`,
`qas[{qa_id, sent_id, predicate_idx, predicate, question, answer, answer_idx "a-b",
[clean_answer_idx], annotations[3 votes]}]`.

Polarity trap: in `qas[].annotations` 1 means NOT supported (in `spans[].annotations` 1 means
covered: we never read `spans`). The gold `label` is the majority of the three votes with the
file's polarity (1 = not supported); `supported = 1 - label` is what the classifiers predict.

Indexing: `answer_idx` / `predicate_idx` index the flattened response tokens (all sentences
concatenated). CLIFF summaries are single sentences, verifiability summaries are flat, and for
factscore the file indexes the concatenation, so one rule serves all three. `clean_answer_idx`
(a few copula QAs) wins over `answer_idx` when present.

A handful of test answers differ from their span only by detokenisation ("Seung-won" vs
"Seung - won", "Sánchez" vs "Sanchez"); they are kept (the benchmark counts them) and counted in
`skipped.warnings`, which lists kept-but-odd rows and never removes anything.

Row-level problems are counted by reason in a SkipCounter (with file:line), never raised:
answer positions outside the text, empty premise, a response with no QAs, missing or malformed
votes. Structural problems (missing file, not JSON, a line that is not an object with `qas`)
raise with the path.
"""
from __future__ import annotations

import json
import logging
import re
import unicodedata
from functools import partial
from pathlib import Path

from data_prep.records import DataFormatError, SkipCounter, check_not_cut, text_lines

log = logging.getLogger(__name__)

DATASETS = ("cliff", "factscore", "verifiability")
EXAMPLE_KEYS = ("example_id", "response_id", "group_id", "dataset", "split", "premise_tokens", "summary_tokens",
                "sentence_index", "sent_id", "predicate", "predicate_index", "question", "answer",
                "answer_span", "hypothesis", "label", "supported", "votes", "model")
_SPAN = re.compile(r"^\s*(-?\d+)\s*-\s*(-?\d+)\s*$")


def flatten_summary(summary) -> tuple[list[str], list[int]]:
    """(flat tokens, sentence start offsets) for a summary that is either a list of sentence token
    lists or one flat token list."""
    if not summary:
        return [], []
    if all(isinstance(s, list) for s in summary):
        sents = summary
    elif all(isinstance(s, str) for s in summary):
        sents = [summary]
    else:
        raise ValueError("summary mixes strings and token lists")
    flat, offsets = [], []
    for s in sents:
        offsets.append(len(flat))
        flat.extend(str(t) for t in s)
    return flat, offsets


def _parse_span(value) -> tuple[int, int] | None:
    if isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            return int(value[0]), int(value[1])
        except (TypeError, ValueError):
            return None
    m = _SPAN.match(str(value)) if value is not None else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _norm(text: str) -> str:
    """Comparison key that ignores spacing and accents (detokenisation glitches in the release)."""
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text if not unicodedata.combining(c) and not c.isspace()).lower()


def _majority(votes) -> int | None:
    if not isinstance(votes, list) or not votes or any(v not in (0, 1) for v in votes):
        return None
    ones = sum(votes)
    if 2 * ones == len(votes):  # a tie (even number of votes) has no majority
        return None
    return int(2 * ones > len(votes))


def response_id(row: dict) -> str:
    """dataset:source_id:model. source_id alone is not unique: CLIFF has a BART and a PEGASUS
    summary of each article, FActScore several models per person."""
    return f"{row.get('dataset')}:{row.get('source_id')}:{row.get('model')}"


def group_id(row: dict) -> str:
    """The reference document (dataset:source_id): cross-validation folds group by it, so that
    neither a response nor its reference is split across folds."""
    return f"{row.get('dataset')}:{row.get('source_id')}"


class Skipped(Exception):
    """A response or QA the reader cannot use; `reason` is what it is counted under."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def read_row(line: str, where: str) -> dict:
    """One JSONL line as a response object; DataFormatError naming file:line when it is not one."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        check_not_cut(line, where)
        raise DataFormatError(f"{where}: not valid JSON ({e.msg})") from None
    if not isinstance(row, dict) or "qas" not in row or "summary" not in row or "source" not in row:
        raise DataFormatError(f"{where}: expected an object with 'source', 'summary' and 'qas'")
    return row


def premise_tokens(source) -> list[str]:
    """The reference as a token list (a string is split on whitespace)."""
    if isinstance(source, str):
        source = source.split()
    return [str(t) for t in (source or [])]


def _response_parts(row: dict) -> tuple[list[str], list[str], list[int], list]:
    """(premise tokens, flat summary tokens, sentence offsets, qas) of a usable response;
    Skipped(reason) when the response cannot give any example."""
    if row.get("dataset") not in DATASETS:
        raise Skipped("unknown_dataset")
    premise = premise_tokens(row["source"])
    if not premise:
        raise Skipped("empty_premise")
    try:
        summary, offsets = flatten_summary(row["summary"])
    except ValueError:
        raise Skipped("malformed_summary") from None
    if not summary:
        raise Skipped("empty_summary")
    qas = row["qas"] or []
    if not qas:
        raise Skipped("response_without_qas")
    return premise, summary, offsets, qas


def qa_label(qa: dict) -> int:
    """The gold label: majority of the QA's votes, file polarity (1 = NOT supported);
    Skipped("labels_missing") for missing, malformed or tied votes."""
    label = _majority(qa.get("annotations"))
    if label is None:
        raise Skipped("labels_missing")
    return label


def _question_answer(qa: dict) -> tuple[str, str]:
    """The QA's question and answer as written (both non-blank strings)."""
    question, answer = qa.get("question"), qa.get("answer")
    if not isinstance(question, str) or not question.strip() or not isinstance(answer, str) \
            or not answer.strip():
        raise Skipped("empty_question_or_answer")
    return question, answer


def answer_span(qa: dict, n_tokens: int) -> tuple[int, int]:
    """The answer's [start, end) in the flattened summary: `clean_answer_idx` when present and
    parsable, else `answer_idx`; Skipped when neither parses or the span leaves the text."""
    span = _parse_span(qa.get("clean_answer_idx")) if "clean_answer_idx" in qa else None
    if span is None:
        span = _parse_span(qa.get("answer_idx"))
    if span is None:
        raise Skipped("answer_idx_unparsable")
    start, end = span
    if not 0 <= start < end <= n_tokens:
        raise Skipped("answer_outside_text")
    return start, end


def predicate_index(qa: dict, n_tokens: int) -> int:
    """`predicate_idx` as an int inside the summary, or -1."""
    pred_idx = qa.get("predicate_idx")
    pred_idx = int(pred_idx) if isinstance(pred_idx, int) or str(pred_idx).lstrip("-").isdigit() else -1
    return pred_idx if 0 <= pred_idx < n_tokens else -1


def _qa_example(qa, qi: int, response: dict, warn) -> dict:
    """The entailment example of the `qi`-th QA of a response (`response`: its fields shared by
    all its examples); Skipped(reason) when it has none. `warn(reason)` counts a kept-but-odd QA."""
    if not isinstance(qa, dict):
        raise Skipped("malformed_qa")
    label = qa_label(qa)
    question, answer = _question_answer(qa)
    summary = response["summary_tokens"]
    start, end = answer_span(qa, len(summary))
    if _norm(" ".join(summary[start:end])) != _norm(answer):
        warn("answer_text_differs_from_span")
    pred_idx = predicate_index(qa, len(summary))
    if pred_idx == -1:
        warn("predicate_outside_text")
    # the sentence that holds the answer (from the offsets, not sent_id, which
    # verifiability leaves at 0 for a flat summary)
    sentence_index = max(i for i, o in enumerate(response["offsets"]) if o <= start)
    qa_id = qa.get("qa_id", qi)
    return {
        "example_id": f"{response['response_id']}:{qa_id}",
        "response_id": response["response_id"],
        "group_id": response["group_id"],
        "dataset": response["dataset"],
        "split": response["split"],
        "premise_tokens": response["premise_tokens"],
        "summary_tokens": summary,
        "sentence_index": sentence_index,
        "sent_id": qa.get("sent_id", 0),
        "predicate": qa.get("predicate", ""),
        "predicate_index": pred_idx,
        "question": question.strip(),
        "answer": answer.strip(),
        "answer_span": [start, end],
        "hypothesis": f"{question.strip()} {answer.strip()}",
        "label": label,
        "supported": 1 - label,
        "votes": list(qa["annotations"]),
        "model": response["model"],
    }


def read_consistency(path: str | Path, split: str) -> tuple[list[dict], SkipCounter]:
    """Read one QASemConsistency JSONL file (`dev.jsonl` / `test.jsonl`) into entailment examples,
    one per QA. Returns (examples, skipped); `skipped.warnings` counts kept rows worth a look."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: no such file (QASemConsistency {split} split)")
    skipped = SkipCounter()
    skipped.warnings = SkipCounter()
    examples: list[dict] = []
    seen_ids: set[str] = set()
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        row = read_row(line, where)
        try:
            premise, summary, offsets, qas = _response_parts(row)
        except Skipped as e:
            skipped.skip(e.reason, where)
            continue
        rid = response_id(row)
        if rid in seen_ids:
            skipped.warnings.skip("duplicate_response_id", where)
            rid = f"{rid}#L{lineno}"
        seen_ids.add(rid)
        response = {"response_id": rid, "group_id": group_id(row), "dataset": row.get("dataset"),
                    "split": split, "premise_tokens": premise, "summary_tokens": summary,
                    "offsets": offsets, "model": row.get("model")}
        for qi, qa in enumerate(qas):
            qwhere = f"{where} qa {qa.get('qa_id', qi) if isinstance(qa, dict) else qi}"
            try:
                examples.append(_qa_example(qa, qi, response, warn=partial(skipped.warnings.skip, where=qwhere)))
            except Skipped as e:
                skipped.skip(e.reason, qwhere)
    if skipped:
        log.warning("%s: skipped %s", path, dict(skipped))
    if skipped.warnings:
        log.info("%s: kept with warnings %s", path, dict(skipped.warnings))
    return examples, skipped


def count_responses(examples: list[dict]) -> int:
    return len({e["response_id"] for e in examples})


def summarize(examples: list[dict], skipped: SkipCounter) -> dict:
    """{"responses", "qas", "not_supported", "by_dataset": {ds: {"responses", "qas"}}, "skipped"}."""
    by = {}
    for ds in DATASETS:
        sub = [e for e in examples if e["dataset"] == ds]
        by[ds] = {"responses": count_responses(sub), "qas": len(sub)}
    return {"responses": count_responses(examples), "qas": len(examples),
            "not_supported": sum(e["label"] for e in examples), "by_dataset": by,
            "skipped": dict(skipped), "warnings": dict(getattr(skipped, "warnings", {}))}


if __name__ == "__main__":  # python -m data_prep.consistency FILE [SPLIT]: print the counts
    import sys

    exs, sk = read_consistency(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else Path(sys.argv[1]).stem)
    print(json.dumps(summarize(exs, sk), indent=1))
