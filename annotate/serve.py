"""Serve the annotation app: python -m annotate.serve tasks=FILE db=PATH port=N [host=127.0.0.1] [annotators=[a,b,c]]

Loads the task file (a bad line stops here, naming it, before the database is touched), opens or creates
the database (refused if it was built from another task file), creates the named annotators and prints
their personal links (also written to <db>.links.json, with the admin link), then serves on Uvicorn until
SIGTERM or Ctrl-C, which stop it cleanly: every label was committed when its request returned.
"""
from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from annotate.quality import read_gold
from annotate.store import Refused, Store, TaskMismatch
from annotate.tasks import TaskFileError, by_uncertainty, file_digest, load_tasks

log = logging.getLogger(__name__)


def open_store(cfg: DictConfig) -> Store:
    parse = None
    if cfg.get("release"):  # plain pairs: parsed by the release's detector and parser, scored by its classifier
        from models.consistency import ConsistencyPipeline

        parse = ConsistencyPipeline.from_pretrained(str(cfg.release)).run
    items = load_tasks(cfg.tasks, cfg.references, parse)
    if cfg.order == "uncertainty":
        items = by_uncertainty(items)
    elif cfg.order != "file":
        raise TaskFileError(f"order={cfg.order}: expected file or uncertainty")
    store = Store(cfg.db)
    try:
        store.load_items(items, str(cfg.tasks), file_digest(cfg.tasks), int(cfg.k))
        for name in cfg.annotators:
            store.add_annotator(str(name))
        for name in cfg.revoke:
            store.revoke(str(name))
    except BaseException:
        store.close()
        raise
    return store


def write_links(store: Store, base: str) -> dict:
    links = {"admin": f"{base}/admin/{store.meta('admin_token')}",
             "annotators": {a["name"]: f"{base}/a/{a['token']}" for a in store.annotators()
                            if not a["revoked"] and not a["platform"]}}
    path = Path(f"{store.path}.links.json")
    path.write_text(json.dumps(links, indent=1) + "\n")
    path.chmod(0o600)  # the links are the annotators' and the admin's credentials
    return links


@hydra.main(version_base="1.3", config_path="../conf", config_name="annotate_serve")
def main(cfg: DictConfig) -> None:
    import uvicorn

    from annotate.app import make_app

    try:
        gold = read_gold(cfg.gold) if cfg.gold else None
        store = open_store(cfg)
    except (TaskFileError, TaskMismatch, Refused, FileNotFoundError) as e:  # the message names file and line
        log.error("%s", getattr(e, "message", e))
        sys.exit(1)
    if gold and not set(gold) & set(store.items()):
        log.warning("gold=%s: none of its items is a task item: the gold column stays empty", cfg.gold)
    try:
        app = make_app(store, qa_check=bool(cfg.qa_check), suggestion=str(cfg.suggestion),
                       completion_code=cfg.completion_code, gold=gold)
        links = write_links(store, f"http://{cfg.host}:{cfg.port}")
        log.info("%d items, k=%d; links in %s.links.json", len(store.items()), store.k, store.path)
        for name, url in links["annotators"].items():
            log.info("  %s: %s", name, url)
        # Uvicorn catches SIGTERM / SIGINT, stops accepting, finishes the requests in flight, then raises the
        # signal again under the handler it found: these no-op handlers make that a normal return (exit 0)
        stops = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: stops.append(signum))
        uvicorn.run(app, host=cfg.host, port=int(cfg.port), log_level="warning", access_log=False)
    finally:
        store.close()
    log.info("stopped")


if __name__ == "__main__":
    main()
