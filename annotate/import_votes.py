"""Load a benchmark file's own votes into an annotation database:
python -m annotate.import_votes tasks=FILE db=PATH

Vote position j of every QA and span becomes pseudo-annotator `release-j`, who took and submitted the
item, in order j = 0, 1, 2: an export then writes the votes back in the same order (the round trip of
docs/annotation.md). Every QA vote is stored as given (see annotate/votes.py for the few that disagree
with their span). The file is checked whole before anything is written.
"""
from __future__ import annotations

import logging
import sys
import time

import hydra
from omegaconf import DictConfig

from annotate.store import Store, TaskMismatch
from data_prep.consistency import response_id
from annotate.tasks import TaskFileError, file_digest, load_tasks, task_lines

log = logging.getLogger(__name__)


def import_votes(store: Store, task_path) -> int:
    """Import every vote of the (already loaded) task file; returns the number of labels written."""
    items = store.items()
    rows = []
    for lineno, row in task_lines(task_path):
        n = {len(x.get("annotations") or []) for x in row["qas"] + row.get("spans", [])}
        if len(n) != 1 or not n.pop():
            raise TaskFileError(f"{task_path}:{lineno}: every QA and span needs the same number of votes to import")
        rows.append((lineno, row))
    now, written = time.time(), 0
    with store.tx() as db:
        for lineno, row in rows:
            item_id = response_id(row)
            if item_id not in items:
                raise TaskFileError(f"{task_path}:{lineno}: item {item_id} is not in database {store.path}")
            for j in range(len(row["qas"][0]["annotations"])):
                name = f"release-{j}"
                got = db.execute("SELECT annotator_id FROM annotators WHERE name = ?", (name,)).fetchone()
                if got is None:
                    db.execute("INSERT INTO annotators (name, token, revoked, created) VALUES (?, ?, 1, ?)",
                               (name, f"release-{j}-{now}", now))  # revoked: nobody logs in as the release
                    got = db.execute("SELECT annotator_id FROM annotators WHERE name = ?", (name,)).fetchone()
                aid = got["annotator_id"]
                db.execute("INSERT INTO assignments (item_id, annotator_id, started, finished) VALUES (?, ?, ?, ?)",
                           (item_id, aid, now, now))
                labels = [(item_id, aid, "qa", str(q["qa_id"]), q["annotations"][j], now) for q in row["qas"]]
                labels += [(item_id, aid, "span", str(s["id"]), s["annotations"][j], now) for s in row.get("spans", [])]
                db.executemany("INSERT INTO labels (item_id, annotator_id, kind, target, value, at) "
                               "VALUES (?, ?, ?, ?, ?, ?)", labels)
                written += len(labels)
    return written


@hydra.main(version_base="1.3", config_path="../conf", config_name="annotate_import")
def main(cfg: DictConfig) -> None:
    try:
        items = load_tasks(cfg.tasks)
        store = Store(cfg.db)
        try:
            # k: the release's number of votes per QA (3), so the admin page counts these items complete
            k = len(next(task_lines(cfg.tasks))[1]["qas"][0].get("annotations") or []) or 3
            store.load_items(items, cfg.tasks, file_digest(cfg.tasks), k=k)
            n = import_votes(store, cfg.tasks)
        finally:
            store.close()
    except (TaskFileError, TaskMismatch) as e:  # the message names the file and line: no traceback
        log.error("%s", e)
        sys.exit(1)
    log.info("imported %d votes of %d items into %s", n, len(items), cfg.db)


if __name__ == "__main__":
    main()
