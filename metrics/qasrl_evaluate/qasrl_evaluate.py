"""The QA-SRL / QANom argument metric (metrics/qasrl.py `evaluate_records`) as a Hugging Face
`evaluate` module, loaded from this folder, offline:

    import evaluate
    from metrics import qasrl_evaluate_path
    qasrl = evaluate.load(qasrl_evaluate_path())       # or evaluate.load("metrics/qasrl_evaluate")
    qasrl.compute(predictions=pred_records, references=gold_records, protocol="gs")

Each prediction / reference is one canonical record (data_prep/records.py): a dict, or its JSON
string. The module's feature is `Value("string")` (the record's JSON), not a nested Features
schema: Arrow would coerce or drop what the metric checks (a float or bool span end, a missing
`qas`, keys outside the schema), so a record reaches `evaluate_records` exactly as given.
Everything is scored by `metrics.qasrl.evaluate_records`; this file only encodes and decodes.
"""
from __future__ import annotations

import json

import datasets
import evaluate

from metrics.qasrl import InvalidRecordError, evaluate_records

_DESCRIPTION = """\
QA-SRL / QANom argument metrics of predicted QA-SRL records against gold ones: micro-averaged
precision, recall and F1 of unlabeled argument detection (UA: answer spans matched one-to-one
by IOU), labeled argument detection (LA: UA matches whose QAs have the same role) and role
detection (QAs aligned through the matched spans), with breakdowns by source and predicate type.
Protocols: "qanom" (default; IOU >= 0.3, greedy matching, Klein et al. 2020) and "gs"
(IOU >= 0.5, maximum bipartite matching, Roit et al. 2020); `match_strict=True` makes the
comparison `>` (what the QANom reference code does). The numbers are those of
`metrics.qasrl.evaluate_records` and `python -m evaluation.qasrl`.

Inputs are canonical records (sentence_id, predicate_index, tokens, qas: [{question, slots,
answers: [[start, end)], ...}], ...), one per predicate, each a dict or its JSON string; the
module's feature is datasets.Value("string") holding the JSON, so a record passes unchanged.
Records are paired by (sentence_id, predicate_index), never by position: `predictions` and
`references` may be in any order. `evaluate` needs the two lists to have the same length in each
call; pad the shorter one with None (or ""), which stands for no record: a gold predicate without
a prediction counts all its arguments as misses, a prediction without gold as spurious.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `dict` or `str`): predicted records, one per predicate: canonical
        record dicts or their JSON strings; None or "" pads (no record).
    references (`list` of `dict` or `str`): gold records, same form, same length as predictions.
    protocol (`str`, default "qanom"): "qanom" (IOU >= 0.3, greedy) or "gs" (IOU >= 0.5,
        maximum matching).
    match_strict (`bool`, default False): require IOU > threshold instead of >=.
Returns:
    The dict of `metrics.qasrl.evaluate_records`, unchanged (nested, not flattened):
    "ua", "la", "role": {"precision", "recall", "f1", "tp", "fp", "fn"} (P/R/F1 in [0, 1]);
    "by_source", "by_predicate_type": {label: {"ua", "la", "role", "predicates"}};
    "predicates" (gold), "missing_predicates", "extra_predicates", "protocol", "strict".
Raises:
    metrics.qasrl.InvalidRecordError (a ValueError) naming the side ("gold" / "predicted"), the
    record's position (its row: index in the concatenated inputs of add/add_batch/compute) and
    its sentence_id / predicate_index, for a record the metric cannot score: not JSON, not a
    record with sentence_id and predicate_index, no `qas` list, an answer that is not a
    [start, end) integer pair inside the sentence. ValueError for a duplicate predicate or an
    unknown protocol.
Examples:
    >>> qasrl = evaluate.load(qasrl_evaluate_path())
    >>> gold = {"sentence_id": "s1", "predicate_index": 1, "tokens": ["He", "ate", "an", "apple"],
    ...         "qas": [{"question": "who ate something?", "answers": [[0, 1]]}]}
    >>> pred = dict(gold, qas=[{"question": "who ate?", "answers": [[0, 1]]}])
    >>> qasrl.compute(predictions=[pred], references=[gold], protocol="gs")["ua"]["f1"]
    1.0
"""

_CITATION = """\
@inproceedings{klein-etal-2020-qanom,
    title = "{QAN}om: Question-Answer driven {SRL} for Nominalizations",
    author = "Klein, Ayal and Mamou, Jonathan and Pyatkin, Valentina and Stepanov, Daniela and
              He, Hangfeng and Roth, Dan and Zettlemoyer, Luke and Dagan, Ido",
    booktitle = "Proceedings of the 28th International Conference on Computational Linguistics",
    year = "2020",
}
@inproceedings{roit-etal-2020-controlled,
    title = "Controlled Crowdsourcing for High-Quality {QA}-{SRL} Annotation",
    author = "Roit, Paul and Klein, Ayal and Stepanov, Daniela and Mamou, Jonathan and
              Michael, Julian and Stanovsky, Gabriel and Zettlemoyer, Luke and Dagan, Ido",
    booktitle = "Proceedings of the 58th Annual Meeting of the Association for Computational Linguistics",
    year = "2020",
}
"""


def _encode(records) -> list[str] | None:
    """Records (dicts, JSON strings, None) -> the JSON strings the Value("string") feature stores."""
    if records is None:
        return None
    return ["" if r is None else r if isinstance(r, str) else json.dumps(r) for r in records]


def _decode(column: list[str], side: str) -> tuple[list[dict], list[int]]:
    """The stored strings -> the records, and for each the row it came from (padding dropped)."""
    records, rows = [], []
    for row, text in enumerate(column):
        if not text:
            continue
        try:
            rec = json.loads(text)
        except ValueError as e:
            raise InvalidRecordError(side, row, f"not a JSON record ({e}): {text[:80]!r}") from None
        if not isinstance(rec, dict) or "sentence_id" not in rec or "predicate_index" not in rec:
            raise InvalidRecordError(side, row, f"not a record with sentence_id and predicate_index: {text[:80]!r}")
        records.append(rec)
        rows.append(row)
    return records, rows


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class QasrlEvaluate(evaluate.Metric):
    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=["https://github.com/kleinay/QANom"],
            reference_urls=["https://aclanthology.org/2020.coling-main.274",
                            "https://aclanthology.org/2020.acl-main.626"],
        )

    # add / add_batch (compute goes through add_batch) take record dicts as well as JSON strings.
    def add_batch(self, *, predictions=None, references=None, **kwargs):
        """Add a batch of predicted and gold records (dicts or JSON strings; None pads)."""
        return evaluate.EvaluationModule.add_batch(
            self, predictions=_encode(predictions), references=_encode(references), **kwargs)

    def add(self, *, prediction=None, reference=None, **kwargs):
        """Add one predicted and one gold record (a dict or JSON string; None pads)."""
        prediction, reference = (_encode([x])[0] for x in (prediction, reference))
        return evaluate.EvaluationModule.add(self, prediction=prediction, reference=reference, **kwargs)

    def _compute(self, predictions, references, protocol: str = "qanom", match_strict: bool = False) -> dict:
        gold, gold_rows = _decode(references, "gold")
        pred, pred_rows = _decode(predictions, "predicted")
        try:
            return evaluate_records(gold, pred, protocol=protocol, strict=match_strict)
        except InvalidRecordError as e:  # position in the unpadded list -> row of the inputs
            row = (gold_rows if e.side == "gold" else pred_rows)[e.position]
            message = str(e).split(": ", 1)[1]
            raise InvalidRecordError(e.side, row, message) from None
