"""Leakage: no document that holds an evaluation sentence may appear in a training file.

QA-SRL GS dev/test sentences are a subset of Bank dev/test, and QANom dev/test sentences are the
GS sentences, so a training set built from Bank dev/test must drop whole documents (sentences of
one document share context, names and events)."""
from __future__ import annotations

from data_prep.records import document_id


def evaluation_documents(*record_lists) -> set[str]:
    return {document_id(r["sentence_id"]) for records in record_lists for r in records}


def drop_documents(records: list[dict], documents: set[str]) -> list[dict]:
    return [r for r in records if document_id(r["sentence_id"]) not in documents]


def check_no_leakage(training: dict[str, list[dict]], evaluation_docs: set[str]) -> None:
    """Raise naming the file and the first leaked documents when a training set holds one."""
    for name, records in training.items():
        leaked = sorted({document_id(r["sentence_id"]) for r in records} & evaluation_docs)
        if leaked:
            raise AssertionError(f"leakage: {name} holds {len(leaked)} evaluation document(s), e.g. {leaked[:5]}")
