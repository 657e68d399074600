"""Write an annotation database as the benchmark's JSONL: python -m annotate.export db=PATH out=FILE

The same fields and polarities as the release (`qas[].annotations` 1 = not supported,
`spans[].annotations` 1 = covered), one vote per annotator who submitted the item, in the order they
took it; items in task-file order; only items with at least `min_votes` submissions (default: k).
data_prep.consistency reads the file as it reads dev.jsonl / test.jsonl.

The annotators' notes go to a file beside it (FILE with the suffix .notes.jsonl: {"item_id", "annotator",
"note"} per submitted note), so the export itself keeps the release's exact format and its byte-equal
round trip.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

import hydra
from omegaconf import DictConfig

from annotate.store import Store
from annotate.votes import export_row

log = logging.getLogger(__name__)


def release_json(row: dict) -> str:
    """One line written as the release writes its own: compact separators, ASCII escapes and "/" escaped
    as "\\/" (PHP's json_encode); any JSON reader reads it the same, and a round trip of the release is
    byte-equal to it."""
    return json.dumps(row, ensure_ascii=True, separators=(",", ":")).replace("/", "\\/")


def export_lines(store: Store, min_votes: int | None = None):
    """The export's lines (with their newline), one per item with enough submitted annotators."""
    min_votes = store.k if min_votes is None else int(min_votes)
    votes = store.finished_votes()
    for item_id, item in store.items().items():
        labels = votes.get(item_id, [])
        if labels and len(labels) >= min_votes:
            yield release_json(export_row(item, labels)) + "\n"


def notes_lines(store: Store):
    """The notes of submitted items, one JSON line each (with its newline)."""
    for n in store.notes():
        if n["submitted"]:
            yield json.dumps({k: n[k] for k in ("item_id", "annotator", "note")}, ensure_ascii=False) + "\n"


def notes_path(out: str | Path) -> Path:
    return Path(out).with_suffix(".notes.jsonl")


def agreement_table(store: Store) -> str:
    """metrics.agreement's table over the items that have all k votes so far (the admin page)."""
    from metrics.agreement import agreement, table

    rows = [json.loads(line) for line in export_lines(store)]
    return table(agreement(rows)) if rows else "no item has all its votes yet"


def export(db: str | Path, out: str | Path, min_votes: int | None = None) -> int:
    """Write the export; returns the number of items written."""
    if not Path(db).exists():
        raise FileNotFoundError(f"{db}: no such annotation database")
    store = Store(db)
    try:
        lines = list(export_lines(store, min_votes))
        notes = list(notes_lines(store))
    finally:
        store.close()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    for path, text in ((Path(out), "".join(lines)), (notes_path(out), "".join(notes))):
        tmp = Path(f"{path}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)  # a reader never sees half a file
    return len(lines)


@hydra.main(version_base="1.3", config_path="../conf", config_name="annotate_export")
def main(cfg: DictConfig) -> None:
    n = export(cfg.db, cfg.out, cfg.min_votes)
    log.info("wrote %d items to %s, the notes to %s", n, cfg.out, notes_path(cfg.out))


if __name__ == "__main__":
    main()
