"""Import a Mechanical Turk batch results file into an annotation database:
python -m annotate.import_platform db=PATH results=Batch_123_batch_results.csv

Each HIT answer carries `Answer.item_id` and `Answer.labels` (the page posts them with the HIT: see
annotate/app.py). A row whose AssignmentId the database already holds is stored once: it is counted as
`already_stored` and changes nothing (a worker's double submit, or the same file imported twice). A row
the database lacks (labels given to another copy of the server, a lost disk) is restored: the worker's
annotator, the assignment and its labels, submitted. Rejected assignments are counted and left out. The
whole file is checked first; a bad row stops the import naming file:line, and nothing is written.
"""
from __future__ import annotations

import csv
import json
import logging
import sys
import time
from pathlib import Path

import hydra
from omegaconf import DictConfig

from annotate.store import KINDS, Store
from annotate.votes import describe_rows, missing_labels

log = logging.getLogger(__name__)
COLUMNS = ("WorkerId", "AssignmentId", "AssignmentStatus", "Answer.item_id", "Answer.labels")


class ResultsFileError(ValueError):
    """A results file that cannot be imported; the message names the file and line."""


def read_results(path: Path, items: dict) -> list[dict]:
    """Every usable row (labels parsed and checked against the item), or ResultsFileError naming file:line."""
    with path.open(newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ResultsFileError(f"{path}: columns {missing} are missing (an MTurk batch results CSV of this app's HITs)")
        rows = []
        for row in reader:
            where = f"{path}:{reader.line_num}"
            item = items.get(row["Answer.item_id"])
            if item is None:
                raise ResultsFileError(f"{where}: item {row['Answer.item_id']!r} is not in the database")
            try:
                labels = json.loads(row["Answer.labels"])
                labels = {k: {str(t): int(v) for t, v in labels.get(k, {}).items()} for k in KINDS}
            except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
                raise ResultsFileError(f"{where}: Answer.labels is not this app's label JSON") from None
            if any(v not in (0, 1) for k in KINDS for v in labels[k].values()):
                raise ResultsFileError(f"{where}: a label value other than 0 or 1")
            if row["AssignmentStatus"] != "Rejected" and missing_labels(item, labels):
                raise ResultsFileError(f"{where}: labels missing for {describe_rows(item, missing_labels(item, labels))}")
            rows.append({**row, "labels": labels, "where": where})
    return rows


def import_results(store: Store, path: str | Path) -> dict:
    """Counts: rows, rejected, already_stored, restored."""
    rows = read_results(Path(path), store.items())
    counts = {"rows": len(rows), "rejected": 0, "already_stored": 0, "restored": 0}
    for row in rows:
        if row["AssignmentStatus"] == "Rejected":
            counts["rejected"] += 1
            continue
        token = store.add_annotator(f"mturk:{row['WorkerId']}", platform="mturk", worker_id=row["WorkerId"])
        aid = store.annotator(token)["annotator_id"]
        item_id, now = row["Answer.item_id"], time.time()
        with store.tx() as db:
            known = db.execute("SELECT 1 FROM assignments WHERE platform_assignment = ? OR "
                               "(item_id = ? AND annotator_id = ? AND finished IS NOT NULL)",
                               (row["AssignmentId"], item_id, aid)).fetchone()
            if known:
                counts["already_stored"] += 1
                continue
            db.execute("INSERT INTO assignments (item_id, annotator_id, started) VALUES (?, ?, ?) "
                       "ON CONFLICT DO NOTHING", (item_id, aid, now))
            db.executemany("INSERT INTO labels (item_id, annotator_id, kind, target, value, at) VALUES (?, ?, ?, ?, ?, ?) "
                           "ON CONFLICT DO UPDATE SET value = excluded.value",
                           [(item_id, aid, k, t, v, now) for k in KINDS for t, v in row["labels"][k].items()])
            db.execute("UPDATE assignments SET finished = ?, platform_assignment = ? WHERE item_id = ? AND annotator_id = ?",
                       (now, row["AssignmentId"], item_id, aid))
            counts["restored"] += 1
    return counts


@hydra.main(version_base="1.3", config_path="../conf", config_name="annotate_import_platform")
def main(cfg: DictConfig) -> None:
    if not Path(cfg.db).exists():
        log.error("%s: no such annotation database", cfg.db)
        sys.exit(1)
    store = Store(cfg.db)
    try:
        counts = import_results(store, cfg.results)
    except (ResultsFileError, FileNotFoundError) as e:
        log.error("%s", e)
        sys.exit(1)
    finally:
        store.close()
    log.info("%s: %s", cfg.results, json.dumps(counts))


if __name__ == "__main__":
    main()
