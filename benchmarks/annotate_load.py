"""Load on the annotation app: N annotators labelling at once against a real `python -m annotate.serve` on
127.0.0.1, each a thread with its own HTTP client doing what the page does (take the current item, save
every span and QA label one request at a time, submit, next item).

    python -m benchmarks.annotate_load [--annotators 20] [--items 120] [--k 3] [--seconds 60] [--out F]

Reports labels/s (acknowledged label saves over the wall time) and the save latency (p50 / p95 / p99 /
max, ms), then checks the database: every acknowledged label is there exactly once (none lost, none
duplicated) and every submitted item has its labels. Items are synthetic (4 spans, 6 QAs on 2
predicates each) unless --tasks names a benchmark file. Writes benchmarks/results/annotate_load-<time>.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import ROOT, write_result


def synthetic_tasks(path: Path, n: int) -> Path:
    tokens = "The council approved a budget on Monday and the mayor proposed a plan for schools .".split()
    spans = [(0, 2), (3, 5), (5, 7), (8, 10)]
    qas = [(i, 2 if i < 3 else 9, spans[i % 4]) for i in range(6)]
    with path.open("w") as f:
        for k in range(n):
            row = {"source_id": k, "source": tokens + ["."] * (k % 3), "summary": [tokens], "model": "synthetic",
                   "datasource": "load", "dataset": "cliff",
                   "qas": [{"qa_id": i, "sent_id": 0, "predicate_idx": p, "predicate_pos": "VERB",
                            "predicate": tokens[p], "question": f"question {i}?", "answer_idx": f"{s}-{e}",
                            "answer": " ".join(tokens[s:e]), "annotations": []} for i, p, (s, e) in qas],
                   "spans": [{"id": j, "start": s, "end": e, "qaIds": [i for i, _, sp in qas if sp == (s, e)],
                              "annotations": []} for j, (s, e) in enumerate(spans)]}
            f.write(json.dumps(row) + "\n")
    return path


def percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def annotator_loop(base: str, token: str, stop_at: float, out: dict) -> None:
    """Label items until none is left or time is up; records every acknowledged save and its latency."""
    import httpx

    lat, acked, submitted, errors = [], [], [], []
    with httpx.Client(base_url=base, timeout=30) as client:
        while time.time() < stop_at:
            item = client.get(f"/api/{token}/item").json()
            if item["item_id"] is None:
                break
            iid = item["item_id"]
            # every span covered, QAs alternating: the page's requests, one label each
            labels = [("span", s["span_id"], 1) for s in item["spans"]]
            labels += [("qa", q["qa_id"], q["qa_id"] % 2) for q in item["qas"]]
            for kind, target, value in labels:
                seq = time.time_ns() // 1000  # numbered in the order given, as the page numbers its answers
                t0 = time.perf_counter()
                r = client.post(f"/api/{token}/label", json={"item_id": iid, "kind": kind, "target": target,
                                                             "value": value, "seq": seq})
                lat.append(time.perf_counter() - t0)
                (acked if r.status_code == 200 else errors).append((iid, kind, str(target), value, r.status_code))
            r = client.post(f"/api/{token}/done", json={"item_id": iid})
            (submitted if r.status_code == 200 else errors).append(iid)
    out.update(latencies=lat, acked=acked, submitted=submitted, errors=errors)


def run(annotators: int, items: int, k: int, seconds: float, tasks: Path | None = None, workdir: Path | None = None) -> dict:
    import httpx

    tmp = Path(workdir or tempfile.mkdtemp(prefix="annotate_load-"))
    tasks = tasks or synthetic_tasks(tmp / "tasks.jsonl", items)
    db = tmp / "load.db"
    names = [f"ann{i:02d}" for i in range(annotators)]
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    server = subprocess.Popen([sys.executable, "-m", "annotate.serve", f"tasks={tasks}", f"db={db}", f"port={port}",
                               f"k={k}", f"annotators=[{','.join(names)}]"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while True:
            if server.poll() is not None:
                raise SystemExit(f"the server exited: {server.stderr.read()}")
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
            if time.time() > deadline:
                raise SystemExit("the server did not answer /healthz in 60 s")
        tokens = json.loads(Path(f"{db}.links.json").read_text())["annotators"]
        outs = [{} for _ in names]
        t0 = time.time()
        threads = [threading.Thread(target=annotator_loop, args=(base, tokens[n].rsplit("/", 1)[1], t0 + seconds, o))
                   for n, o in zip(names, outs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.time() - t0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    # the database against what the server acknowledged
    ids = {a: i for a, i in sqlite3.connect(db).execute("SELECT name, annotator_id FROM annotators")}
    with sqlite3.connect(db) as con:
        stored = con.execute("SELECT item_id, annotator_id, kind, target, value FROM labels").fetchall()
        finished = con.execute("SELECT COUNT(*) FROM assignments WHERE finished IS NOT NULL").fetchone()[0]
    expected = {(iid, ids[n], kind, t, v) for n, o in zip(names, outs) for iid, kind, t, v, _ in o["acked"]}
    lat = [x for o in outs for x in o["latencies"]]
    n_acked = sum(len(o["acked"]) for o in outs)
    return {
        "annotators": annotators, "items": items, "k": k, "wall_s": round(wall, 2),
        "labels_acked": n_acked, "labels_per_s": round(n_acked / wall, 1),
        "items_submitted": sum(len(o["submitted"]) for o in outs), "assignments_finished_in_db": finished,
        "save_ms": {q: round(1000 * percentile(lat, p), 1) for q, p in
                    (("p50", .5), ("p95", .95), ("p99", .99), ("max", 1.0))} if lat else {},
        "lost": len(expected - set(stored)), "unexpected": len(set(stored) - expected),
        "duplicates": len(stored) - len(set(stored)), "errors": sum(len(o["errors"]) for o in outs),
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_1m_at_end": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None},
    }


def free_port() -> int:
    """A free loopback port (closed again before the server binds it)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.annotate_load", description=__doc__.splitlines()[0])
    ap.add_argument("--annotators", type=int, default=20)
    ap.add_argument("--items", type=int, default=120, help="synthetic items (ignored with --tasks)")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60, help="stop after this long even if items are left")
    ap.add_argument("--tasks", type=Path, default=None, help="a benchmark-format task file instead of synthetic items")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    result = run(a.annotators, a.items, a.k, a.seconds, a.tasks)
    path = write_result("annotate_load", result, a.out)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
    print(f"wrote {path}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
