"""The labels' database: SQLite (stdlib sqlite3) in WAL mode, one file beside nothing else.

Why SQLite: one annotation campaign is one file to copy or back up, no server to run, and its
transactions make each label durable once the request that gave it returns (synchronous=FULL), so a
killed server loses nothing that was acknowledged. One connection behind a lock: writes are serialised
by SQLite anyway. A save is a single-row upsert, and the saves, submits and assignments that arrive
while a commit waits for the disk share the next commit (group commit, `_grouped`): one fsync for many
(benchmarks/annotate_load.py measures it).

Tables: meta (the database's format, the task file's path and sha256, k, the platform, the admin token),
items (the tasks, in file order), annotators (token, revoked, platform ids and the hash of the browser a
platform worker is bound to), assignments (who has which item, in the order they took it; `finished` once
submitted), labels (one row per annotator, item, kind and target; an upsert, so a label given twice is
stored once), refused_entries (platform worker ids that another browser tried to use). The page numbers
each answer (`seq`, rising in the order the annotator gave them, kept across reloads): an answer older than
the one stored for the same row (a retried request that arrived late) is acknowledged and ignored, so the
last answer given wins whatever the order of arrival. Label values keep the benchmark's polarities: kind
`span` 1 = covered, kind `qa` 1 = NOT supported, kind `check` 1 = the QA was dropped as nonsensical.

The file holds every credential (the admin token, each annotator's token), so it is created owner-only
(0600) before SQLite opens it; SQLite gives its -wal and -shm files the database's mode. A database of
another FORMAT is refused, naming both, and never migrated in place.
"""
from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from annotate.votes import describe_rows, missing_labels, row_name

# the layout below; 1 is every database written before the format was recorded (no platform, no browser binding)
FORMAT = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (item_id TEXT PRIMARY KEY, position INTEGER NOT NULL UNIQUE, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS annotators (
    annotator_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, token TEXT NOT NULL UNIQUE,
    revoked INTEGER NOT NULL DEFAULT 0, platform TEXT, worker_id TEXT, created REAL NOT NULL,
    browser TEXT);  -- a platform worker's: sha256 of the browser key their first visit was given
CREATE TABLE IF NOT EXISTS assignments (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, item_id TEXT NOT NULL REFERENCES items,
    annotator_id INTEGER NOT NULL REFERENCES annotators, started REAL NOT NULL, finished REAL,
    note TEXT NOT NULL DEFAULT '', platform_assignment TEXT, note_seq INTEGER, UNIQUE (item_id, annotator_id));
CREATE TABLE IF NOT EXISTS labels (
    item_id TEXT NOT NULL, annotator_id INTEGER NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('check', 'span', 'qa')),
    target TEXT NOT NULL, value INTEGER NOT NULL CHECK (value IN (0, 1)), at REAL NOT NULL, seq INTEGER,
    PRIMARY KEY (item_id, annotator_id, kind, target),
    FOREIGN KEY (item_id, annotator_id) REFERENCES assignments (item_id, annotator_id));
CREATE TABLE IF NOT EXISTS refused_entries (
    platform TEXT NOT NULL, worker_id TEXT NOT NULL, attempts INTEGER NOT NULL, first REAL NOT NULL, last REAL NOT NULL,
    PRIMARY KEY (platform, worker_id));
"""
KINDS = ("check", "span", "qa")
# the largest answer number the page can send exactly (JavaScript's Number.MAX_SAFE_INTEGER; the page numbers
# answers by the microsecond); a larger one is refused (422) rather than overflowing SQLite's 64-bit integers
MAX_SEQ = 2**53 - 1


class Refused(Exception):
    """A request the store will not carry out; `status` is the HTTP status the server answers with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


class TaskMismatch(ValueError):
    """The database was built from another task file."""


class FormatMismatch(ValueError):
    """The database was written in another format than this app's (FORMAT)."""


def create_owner_only(path: Path) -> None:
    """An empty file readable by its owner alone, unless one is there: SQLite then opens it as it is, and
    creates the -wal and -shm files with its mode (no moment where another user could open them)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


class Store:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        create_owner_only(self.path)
        self.lock = threading.RLock()
        self._queue_lock, self._queue = threading.Lock(), []  # writes waiting for the next group commit
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        try:
            self._check_format()  # before anything is written to it
        except FormatMismatch:
            self.db.close()
            raise
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # a label acknowledged is a label on disk
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        self._items: dict[str, dict] | None = None

    def _check_format(self) -> None:
        """Refuse a campaign written in another format (a new or never-loaded database has none yet)."""
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone():
            return
        meta = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN ('format', 'task_sha256')").fetchall())
        if "task_sha256" not in meta:
            return
        found = int(meta.get("format", 1))
        if found != FORMAT:
            made_by = "an older" if found < FORMAT else "a newer"
            raise FormatMismatch(
                f"{self.path}: an annotation database of format {found}, written by {made_by} version of the app; "
                f"this one reads format {FORMAT} only, and nothing in the file was changed. Go on with that campaign "
                f"(or export its labels: python -m annotate.export) using the app that wrote it, and start this "
                f"version on a new db=")

    def close(self):
        with self.lock:
            self.db.close()

    # ------------------------------------------------------------------ setup
    @contextmanager
    def tx(self):
        """`with store.tx() as db:` one IMMEDIATE transaction (the write lock taken up front, so two requests
        never both read 'free' and then both take the same slot); committed on success, else rolled back."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")

    def _grouped(self, write):
        """write(db)'s result, run in a write transaction shared with the writes that arrived meanwhile: while
        one commit waits for the disk (synchronous=FULL), the next writes queue, and whoever takes the lock
        next runs them all, each in its own savepoint (a refusal undoes its own changes only), and commits
        them with one fsync (group commit). Each caller returns once the commit holding its write is on disk."""
        op = {"write": write, "done": False}
        with self._queue_lock:
            self._queue.append(op)
        with self.lock:
            if not op["done"]:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit(batch)
        if "error" in op:
            raise op["error"]
        return op["result"]

    def _commit(self, batch: list[dict]) -> None:
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")
            for op in batch:
                db.execute("SAVEPOINT op")
                try:
                    op["result"] = op["write"](db)
                except Exception as e:
                    db.execute("ROLLBACK TO op")
                    op["error"] = e
                db.execute("RELEASE op")
            db.execute("COMMIT")
        except BaseException as e:  # the commit failed: none of the batch is stored, each caller is told
            if db.in_transaction:
                db.execute("ROLLBACK")
            for op in batch:
                op["error"] = e
            raise
        finally:
            for op in batch:
                op["done"] = True

    def meta(self, key: str, default=None):
        with self.lock:
            row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row["value"]

    def load_items(self, items: list[dict], task_path: str, task_sha: str, k: int | None) -> None:
        """Import the items on first use (k: annotators per item, 3 when None); later, refuse a database built
        from another task file. k is fixed at creation: annotate.serve checks a later start's settings
        (campaign_changes) and changes them only when told to (set_k)."""
        old_sha = self.meta("task_sha256")
        if old_sha is not None:
            if old_sha != task_sha:
                raise TaskMismatch(f"database {self.path} was built from task file {self.meta('task_path')} "
                                   f"(sha256 {old_sha[:12]}), not from {task_path} (sha256 {task_sha[:12]}); "
                                   "use a new db= for a new task file")
            return
        with self.tx() as db:
            db.executemany("INSERT INTO items VALUES (?, ?, ?)",
                           [(it["item_id"], i, json.dumps(it, ensure_ascii=False)) for i, it in enumerate(items)])
            db.executemany("INSERT INTO meta VALUES (?, ?)",
                           [("format", str(FORMAT)), ("task_path", str(task_path)), ("task_sha256", task_sha),
                            ("k", str(3 if k is None else k)), ("admin_token", secrets.token_urlsafe(16))])

    def set_meta(self, key: str, value: str | None) -> None:
        with self.tx() as db:
            if value is None:
                db.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))

    @property
    def k(self) -> int:
        return int(self.meta("k", 3))

    def items(self) -> dict[str, dict]:
        """{item_id: item} in file order (read once: items never change after the import)."""
        if self._items is None:
            with self.lock:
                rows = self.db.execute("SELECT data FROM items ORDER BY position").fetchall()
            self._items = {it["item_id"]: it for it in (json.loads(r["data"]) for r in rows)}
        return self._items

    # ------------------------------------------------------------------ annotators
    def add_annotator(self, name: str, platform: str | None = None, worker_id: str | None = None) -> str:
        """The annotator's token (created once; the same name gets the same token back)."""
        with self.tx() as db:
            row = db.execute("SELECT token FROM annotators WHERE name = ?", (name,)).fetchone()
            if row:
                return row["token"]
            token = secrets.token_urlsafe(12)
            db.execute("INSERT INTO annotators (name, token, platform, worker_id, created) VALUES (?, ?, ?, ?, ?)",
                       (name, token, platform, worker_id, time.time()))
            return token

    def revoke(self, name: str) -> None:
        """Their token stops working, and the items they hold unsubmitted go back to the pool (with the labels
        given on them); what they submitted stays."""
        with self.tx() as db:
            row = db.execute("SELECT annotator_id FROM annotators WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise Refused(404, f"no annotator named {name!r}")
            db.execute("UPDATE annotators SET revoked = 1 WHERE annotator_id = ?", (row["annotator_id"],))
            self._release(db, db.execute("SELECT item_id, annotator_id FROM assignments WHERE annotator_id = ? "
                                         "AND finished IS NULL", (row["annotator_id"],)).fetchall())

    def reinstate(self, name: str) -> None:
        """A revoked annotator named again gets a new token (the old link stays dead); their submitted items are
        still theirs, so they never get one twice."""
        with self.tx() as db:
            db.execute("UPDATE annotators SET revoked = 0, token = ? WHERE name = ? AND revoked = 1 AND platform IS NULL",
                       (secrets.token_urlsafe(12), name))

    def enter_worker(self, platform: str, worker_id: str, browser: str, max_workers: int | None) -> str | None:
        """A platform worker's token, for the browser their first visit was bound to (`browser`: the sha256 of
        its key); a first visit binds it. None when the id is bound to another browser: the attempt is recorded
        for the admin page and nothing of the worker's is given. Refused (403) once the campaign has accepted
        max_workers platform workers (revoked ones count: revoking does not make room for a new id)."""
        now = time.time()
        with self.tx() as db:
            row = db.execute("SELECT token, browser FROM annotators WHERE name = ?", (f"{platform}:{worker_id}",)).fetchone()
            if row is not None:
                if row["browser"] is not None and secrets.compare_digest(row["browser"], browser):
                    return row["token"]
                db.execute("INSERT INTO refused_entries VALUES (?, ?, 1, ?, ?) ON CONFLICT DO UPDATE SET "
                           "attempts = attempts + 1, last = excluded.last", (platform, worker_id, now, now))
                return None
            taken = db.execute("SELECT COUNT(*) FROM annotators WHERE platform IS NOT NULL").fetchone()[0]
            if max_workers is not None and taken >= max_workers:
                raise Refused(403, "this campaign takes no more workers")
            token = secrets.token_urlsafe(12)
            db.execute("INSERT INTO annotators (name, token, platform, worker_id, created, browser) VALUES (?, ?, ?, ?, ?, ?)",
                       (f"{platform}:{worker_id}", token, platform, worker_id, now, browser))
            return token

    def refused_entries(self) -> list[sqlite3.Row]:
        """Platform worker ids another browser tried to use (platform, worker_id, attempts, first, last)."""
        with self.lock:
            return self.db.execute("SELECT * FROM refused_entries ORDER BY last DESC").fetchall()

    def annotator(self, token: str) -> sqlite3.Row:
        with self.lock:
            row = self.db.execute("SELECT * FROM annotators WHERE token = ?", (token,)).fetchone()
        if row is None:
            raise Refused(403, "unknown annotator token")
        if row["revoked"]:
            raise Refused(403, f"the token of annotator {row['name']!r} was revoked")
        return row

    def annotators(self) -> list[sqlite3.Row]:
        with self.lock:
            return self.db.execute("SELECT * FROM annotators ORDER BY annotator_id").fetchall()

    # ------------------------------------------------------------------ assignment
    @staticmethod
    def _release(db, held) -> None:
        """Give the (item_id, annotator_id) assignments back to the pool: unsubmitted, their labels go too."""
        for table in ("labels", "assignments"):
            db.executemany(f"DELETE FROM {table} WHERE item_id = ? AND annotator_id = ?",
                           [(r["item_id"], r["annotator_id"]) for r in held])

    def current(self, annotator_id: int, hold_s: float | None = None) -> str | None:
        """The item the annotator works on: an open assignment (resume), else the first item that still
        needs annotators and that they have not had; None when there is none. hold_s: a platform worker's
        item left unsubmitted that long goes back to the pool first (as an MTurk assignment expires)."""
        def write(db):
            if hold_s is not None:
                self._release(db, db.execute(
                    "SELECT a.item_id, a.annotator_id FROM assignments a JOIN annotators n USING (annotator_id) "
                    "WHERE a.finished IS NULL AND n.platform IS NOT NULL AND a.started < ?",
                    (time.time() - hold_s,)).fetchall())
            row = db.execute("SELECT item_id FROM assignments WHERE annotator_id = ? AND finished IS NULL "
                             "ORDER BY seq LIMIT 1", (annotator_id,)).fetchone()
            if row:
                return row["item_id"]
            row = db.execute(
                "SELECT i.item_id FROM items i WHERE "
                "(SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.item_id) < ? AND NOT EXISTS "
                "(SELECT 1 FROM assignments a WHERE a.item_id = i.item_id AND a.annotator_id = ?) "
                "ORDER BY i.position LIMIT 1", (self.k, annotator_id)).fetchone()
            if row is None:
                return None
            db.execute("INSERT INTO assignments (item_id, annotator_id, started) VALUES (?, ?, ?)",
                       (row["item_id"], annotator_id, time.time()))
            return row["item_id"]
        return self._grouped(write)

    def progress(self, annotator_id: int) -> tuple[int, int]:
        """(items finished, items this annotator can have in all: finished + open + still available)."""
        with self.lock:
            done = self.db.execute("SELECT COUNT(*) FROM assignments WHERE annotator_id = ? AND finished IS NOT NULL",
                                   (annotator_id,)).fetchone()[0]
            open_ = self.db.execute("SELECT COUNT(*) FROM assignments WHERE annotator_id = ? AND finished IS NULL",
                                    (annotator_id,)).fetchone()[0]
            free = self.db.execute(
                "SELECT COUNT(*) FROM items i WHERE (SELECT COUNT(*) FROM assignments a WHERE a.item_id = i.item_id) "
                "< ? AND NOT EXISTS (SELECT 1 FROM assignments a WHERE a.item_id = i.item_id AND a.annotator_id = ?)",
                (self.k, annotator_id)).fetchone()[0]
        return done, done + open_ + free

    def _assignment(self, db, annotator_id: int, item_id: str) -> sqlite3.Row:
        row = db.execute("SELECT * FROM assignments WHERE item_id = ? AND annotator_id = ?",
                         (item_id, annotator_id)).fetchone()
        if row is None:
            raise Refused(403, f"item {item_id!r} is not assigned to this annotator")
        return row

    # ------------------------------------------------------------------ labels
    def save_label(self, annotator_id: int, item_id: str, kind: str, target, value: int, seq: int | None = None) -> bool:
        """Store one label (an upsert: given twice, stored once). A span marked not covered clears this
        annotator's QA labels under it: those QAs are now unsupported without asking (the protocol).
        seq: the answer's number on the page; an answer older than the stored one for the row is ignored.
        Returns whether it changed the database (False: a duplicate or a late older answer)."""
        if kind not in KINDS or value not in (0, 1):
            raise Refused(422, f"a label is kind in {KINDS} and value 0 or 1, not {kind!r} = {value!r}")
        item = self.items().get(item_id)
        if item is None:
            raise Refused(404, f"no item {item_id!r}")
        targets = {str(s["span_id"]) for s in item["spans"]} if kind == "span" else {str(q["qa_id"]) for q in item["qas"]}
        if str(target) not in targets:
            raise Refused(422, f"item {item_id!r} has no {kind} {target!r}")
        def write(db):
            a = self._assignment(db, annotator_id, item_id)
            if a["finished"] is not None:
                raise Refused(409, f"this item was already submitted: the answer to {row_name(item, kind, target)} "
                                   "was not saved")
            if kind == "qa" and seq is not None:  # given before its span was marked not covered: that span decided it
                spans = [str(s["span_id"]) for s in item["spans"] if str(target) in map(str, s["qa_ids"])]
                if spans and db.execute(
                        f"SELECT 1 FROM labels WHERE item_id = ? AND annotator_id = ? AND kind = 'span' AND value = 0 "
                        f"AND seq > ? AND target IN ({','.join('?' * len(spans))})",
                        (item_id, annotator_id, seq, *spans)).fetchone():
                    return False
            cur = db.execute("INSERT INTO labels (item_id, annotator_id, kind, target, value, at, seq) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                             "value = excluded.value, at = excluded.at, seq = excluded.seq "
                             # the tie: no page sends two answers with one number, and the highest number
                             # must not freeze a row
                             "WHERE labels.seq IS NULL OR excluded.seq IS NULL OR excluded.seq > labels.seq "
                             "OR (excluded.seq = labels.seq AND excluded.value != labels.value)",
                             (item_id, annotator_id, kind, str(target), value, time.time(), seq))
            if not cur.rowcount:
                return False
            if kind == "span" and value == 0:
                qa_ids = next(s["qa_ids"] for s in item["spans"] if str(s["span_id"]) == str(target))
                db.executemany("DELETE FROM labels WHERE item_id = ? AND annotator_id = ? AND kind = 'qa' AND target = ? "
                               "AND (seq IS NULL OR ? IS NULL OR seq < ?)",
                               [(item_id, annotator_id, str(q), seq, seq) for q in qa_ids])
            return True
        return self._grouped(write)

    def save_note(self, annotator_id: int, item_id: str, note: str, seq: int | None = None) -> bool:
        def write(db):
            a = self._assignment(db, annotator_id, item_id)
            if a["finished"] is not None and note != a["note"]:
                raise Refused(409, "this item was already submitted: the note was not saved")
            return bool(db.execute("UPDATE assignments SET note = ?, note_seq = ? WHERE item_id = ? AND annotator_id = ? "
                                   "AND (note_seq IS NULL OR ? IS NULL OR ? > note_seq OR (? = note_seq AND ? != note))",
                                   (note[:5000], seq, item_id, annotator_id, seq, seq, seq, note[:5000])).rowcount)
        return self._grouped(write)

    def labels(self, annotator_id: int, item_id: str) -> dict:
        """{"check": {qa: v}, "span": {span: v}, "qa": {qa: v}, "note": str, "finished": bool}."""
        with self.lock:
            rows = self.db.execute("SELECT kind, target, value FROM labels WHERE item_id = ? AND annotator_id = ?",
                                   (item_id, annotator_id)).fetchall()
            a = self.db.execute("SELECT note, finished FROM assignments WHERE item_id = ? AND annotator_id = ?",
                                (item_id, annotator_id)).fetchone()
        out = {k: {} for k in KINDS}
        for r in rows:
            out[r["kind"]][r["target"]] = r["value"]
        out["note"] = a["note"] if a else ""
        out["finished"] = bool(a and a["finished"] is not None)
        return out

    def finish(self, annotator_id: int, item_id: str, platform_assignment: str | None = None) -> None:
        """Submit the item: every span and every QA needs an answer (a QA under an uncovered span, or
        dropped in the check, has one). Submitting twice is a no-op (a platform may post twice)."""
        def write(db):
            a = self._assignment(db, annotator_id, item_id)
            if a["finished"] is not None:
                return
            if platform_assignment:
                other = db.execute("SELECT item_id FROM assignments WHERE platform_assignment = ?",
                                   (platform_assignment,)).fetchone()
                if other:  # one platform assignment, one item
                    raise Refused(409, f"platform assignment {platform_assignment!r} already submitted item "
                                       f"{other['item_id']!r}")
            labels = {k: {} for k in KINDS}
            for r in db.execute("SELECT kind, target, value FROM labels WHERE item_id = ? AND annotator_id = ?",
                                (item_id, annotator_id)):
                labels[r["kind"]][r["target"]] = r["value"]
            missing = missing_labels(self.items()[item_id], labels)
            if missing:
                raise Refused(409, "not every question is answered yet: " + describe_rows(self.items()[item_id], missing))
            db.execute("UPDATE assignments SET finished = ?, platform_assignment = ? WHERE item_id = ? AND annotator_id = ?",
                       (time.time(), platform_assignment, item_id, annotator_id))
        return self._grouped(write)

    # ------------------------------------------------------------------ reading everything back
    def finished_votes(self) -> dict[str, list[dict]]:
        """{item_id: [labels of each annotator who submitted it, in the order they took it]}; each labels
        dict also says whose it is (`annotator_id`)."""
        with self.lock:
            asg = self.db.execute("SELECT item_id, annotator_id FROM assignments WHERE finished IS NOT NULL "
                                  "ORDER BY seq").fetchall()
            rows = self.db.execute("SELECT l.* FROM labels l JOIN assignments a USING (item_id, annotator_id) "
                                   "WHERE a.finished IS NOT NULL").fetchall()
        by = {}
        for r in rows:
            by.setdefault((r["item_id"], r["annotator_id"]), {k: {} for k in KINDS})[r["kind"]][r["target"]] = r["value"]
        out = {}
        for a in asg:
            labels = by.get((a["item_id"], a["annotator_id"]), {k: {} for k in KINDS})
            out.setdefault(a["item_id"], []).append({**labels, "annotator_id": a["annotator_id"]})
        return out

    def notes(self) -> list[dict]:
        """The notes annotators wrote ({item_id, annotator, note, submitted}), in the order the items were taken."""
        with self.lock:
            rows = self.db.execute("SELECT a.item_id, n.name AS annotator, a.note, a.finished IS NOT NULL AS submitted "
                                   "FROM assignments a JOIN annotators n USING (annotator_id) WHERE a.note != '' "
                                   "ORDER BY a.seq").fetchall()
        return [dict(r, submitted=bool(r["submitted"])) for r in rows]

    def overview(self) -> dict:
        """Counts for the admin page: per annotator (done, open) and per item (assigned, done)."""
        with self.lock:
            per_ann = self.db.execute(
                "SELECT n.name, n.revoked, n.platform, SUM(a.finished IS NOT NULL) AS done, "
                "SUM(a.seq IS NOT NULL AND a.finished IS NULL) AS open FROM annotators n LEFT JOIN assignments a "
                "USING (annotator_id) GROUP BY n.annotator_id ORDER BY n.annotator_id").fetchall()
            per_item = self.db.execute(
                "SELECT i.item_id, COUNT(a.seq) AS assigned, SUM(a.finished IS NOT NULL) AS done FROM items i "
                "LEFT JOIN assignments a USING (item_id) GROUP BY i.item_id ORDER BY i.position").fetchall()
        return {"annotators": [dict(r) for r in per_ann], "items": [dict(r) for r in per_item]}
