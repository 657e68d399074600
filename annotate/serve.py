"""Serve the annotation app: python -m annotate.serve tasks=FILE db=PATH port=N [host=127.0.0.1] [annotators=[a,b,c]]

Loads the task file (a bad line stops here, naming it, before the database is touched), binds the port
(a busy port stops here: nothing written yet), opens or creates the database (refused if it was built
from another task file or in another format), checks the campaign's settings against the ones it was
created with (k, gold items, platform, annotators: a different one is refused, naming it, unless
reconfigure=true), creates the named annotators and prints their personal links (also written,
owner-only, to <db>.links.json, with the admin link), then serves on Uvicorn until SIGTERM or Ctrl-C,
which stop it cleanly: every label was committed when its request returned.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import hydra
from omegaconf import DictConfig, OmegaConf

from annotate.crowd import PLATFORMS
from annotate.quality import read_gold
from annotate.store import FormatMismatch, Refused, Store, TaskMismatch
from annotate.tasks import TaskFileError, by_uncertainty, file_digest, load_tasks

USAGE = ("usage: python -m annotate.serve tasks=FILE db=PATH [port=8000] [host=127.0.0.1] "
         '"annotators=[ann1,ann2,ann3]" [k=3] [gold=FILE] [reconfigure=true] (conf/annotate_serve.yaml has every option)')

log = logging.getLogger(__name__)


class CampaignChanged(ValueError):
    """A later start asks for other campaign settings than the database was created with."""


class BadOption(ValueError):
    """An option no campaign can take (checked before anything is bound or written)."""


def read_items(cfg: DictConfig) -> list[dict]:
    """The task file's items, in serving order (nothing written)."""
    parse = None
    if cfg.get("release"):  # plain pairs: parsed by the release's detector, parser and classifier
        from models.consistency import ConsistencyPipeline

        parse = ConsistencyPipeline.from_pretrained(str(cfg.release)).run
    items = load_tasks(cfg.tasks, cfg.references, parse)
    if cfg.order == "uncertainty":
        items = by_uncertainty(items)
    elif cfg.order != "file":
        raise TaskFileError(f"order={cfg.order}: expected file or uncertainty")
    return items


def named_annotators(store: Store) -> dict[str, bool]:
    """{name: revoked} of the annotators an admin named (not platform workers, not the release's votes)."""
    return {a["name"]: bool(a["revoked"]) for a in store.annotators()
            if not a["platform"] and not a["name"].startswith("release-")}


def check_options(cfg: DictConfig) -> None:
    """The options no database is needed to judge (before anything is bound or written)."""
    if cfg.platform is not None and cfg.platform not in PLATFORMS:
        raise BadOption(f"platform={cfg.platform}: expected {' or '.join(PLATFORMS)}, or null (no crowd workers)")
    if not str(cfg.public_url).startswith(("http://", "https://")):
        raise BadOption(f"public_url={cfg.public_url}: expected an http:// or https:// address")


def campaign_changes(store: Store, k, gold_sha: str | None, annotators: list[str], platform: str | None) -> list[str]:
    """What this start would change in the campaign, each named; empty when nothing. Left unset (k=null,
    no gold=, no annotators=) a setting keeps the database's; the platform is always compared (null: none)."""
    changes = []
    if k is not None and int(k) != store.k:
        changes.append(f"k: the database has k={store.k}, this start says k={int(k)}")
    old_platform = store.meta("platform") or None
    if platform != old_platform:
        changes.append(f"platform: the database was created with platform={old_platform or 'null'}, "
                       f"this start says platform={platform or 'null'}")
    old_gold = store.meta("gold_sha256")
    if gold_sha is not None and old_gold is not None and gold_sha != old_gold:
        was = f"gold={store.meta('gold_path')}" if old_gold else "no gold file"
        changes.append(f"gold: the database was created with {was} (sha256 {old_gold[:12] or '-'}), "
                       f"this start gives another (sha256 {gold_sha[:12]})")
    known = named_annotators(store)
    new = [n for n in annotators if n not in known]
    back = [n for n in annotators if known.get(n)]
    if new:
        changes.append(f"annotators: {', '.join(new)} not in the campaign (it has {', '.join(known) or 'none'})")
    if back:
        changes.append(f"annotators: {', '.join(back)} revoked")
    return changes


def open_store(cfg: DictConfig, items: list[dict]) -> Store:
    store = Store(cfg.db)
    try:
        created = store.meta("task_sha256") is None
        store.load_items(items, str(cfg.tasks), file_digest(cfg.tasks), cfg.k)
        gold_sha = file_digest(cfg.gold) if cfg.gold else None
        names = [str(n) for n in cfg.annotators]
        if created:
            store.set_meta("gold_sha256", gold_sha or "")
            store.set_meta("gold_path", str(cfg.gold) if cfg.gold else None)
            store.set_meta("platform", cfg.platform or "")
        changes = [] if created else campaign_changes(store, cfg.k, gold_sha, names, cfg.platform)
        if changes and not cfg.reconfigure:
            raise CampaignChanged(f"{store.path}: this start changes the campaign's settings: {'; '.join(changes)}. "
                                  "Start it again without them to keep the campaign as it is, or add reconfigure=true "
                                  "to change it")
        if changes:
            log.warning("reconfigured: %s", "; ".join(changes))
            if cfg.k is not None:
                store.set_meta("k", int(cfg.k))
            if gold_sha is not None:
                store.set_meta("gold_sha256", gold_sha)
                store.set_meta("gold_path", str(cfg.gold))
            store.set_meta("platform", cfg.platform or "")
        for name in names:
            store.add_annotator(name)
            if cfg.reconfigure:
                store.reinstate(name)  # a revoked name: a new token
        for name in cfg.revoke:
            store.revoke(str(name))
    except BaseException:
        store.close()
        raise
    return store


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is written: a busy port stops the start here."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port} ({e.strerror}): is another server running there? "
                      "Nothing was written") from None
    if family in (socket.AF_INET, socket.AF_INET6):
        # set on the listening socket, accepted connections inherit it (Linux); without it the saves of
        # benchmarks/annotate_load took twice as long at the median (50 ms, not 25) on a socket passed to Uvicorn
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def write_links(store: Store, base: str) -> dict:
    """<db>.links.json: the links are the annotators' and the admin's credentials, so the file is owner-only
    from its first byte (a new file of mode 0600, renamed over the old one: a reader never sees half of it)."""
    links = {"admin": f"{base}/admin/{store.meta('admin_token')}",
             "annotators": {a["name"]: f"{base}/a/{a['token']}" for a in store.annotators()
                            if not a["revoked"] and not a["platform"]}}
    path = Path(f"{store.path}.links.json")
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        os.fchmod(fd, 0o600)  # a leftover tmp of another mode (a killed start) is made owner-only before writing
        f.write(json.dumps(links, indent=1) + "\n")
    os.replace(tmp, path)
    return links


@hydra.main(version_base="1.3", config_path="../conf", config_name="annotate_serve")
def main(cfg: DictConfig) -> None:
    import uvicorn

    from annotate.app import make_app

    if OmegaConf.is_missing(cfg, "tasks") or OmegaConf.is_missing(cfg, "db"):
        print(USAGE, file=sys.stderr)
        sys.exit(2)
    try:
        check_options(cfg)
        items = read_items(cfg)  # read only: a bad task file stops here
        gold = read_gold(cfg.gold) if cfg.gold else None
        sock = bind(cfg.host, int(cfg.port))
    except (BadOption, TaskFileError, FileNotFoundError, OSError) as e:  # names the file and line, or the port
        log.error("%s", getattr(e, "message", e))
        sys.exit(1)
    try:
        store = open_store(cfg, items)
    except (TaskMismatch, FormatMismatch, CampaignChanged, Refused, FileNotFoundError) as e:
        sock.close()
        log.error("%s", getattr(e, "message", e))
        sys.exit(1)
    if gold is None and store.meta("gold_path"):  # the campaign's gold file, as created
        gold = read_gold(store.meta("gold_path"))
    if gold and not set(gold) & set(store.items()):
        log.warning("gold=%s: none of its items is a task item: the gold column stays empty", cfg.gold)
    try:
        base = str(cfg.public_url).rstrip("/")
        if urlsplit(base).hostname in ("0.0.0.0", "::"):
            log.warning("public_url=%s: a link to the address every interface listens on reaches no one; start again "
                        "with public_url= the address annotators use", base)
        app = make_app(store, base, qa_check=bool(cfg.qa_check), suggestion=str(cfg.suggestion),
                       completion_code=cfg.completion_code, gold=gold, on_annotators=lambda: write_links(store, base),
                       platform=cfg.platform, max_workers=cfg.max_workers, hold_minutes=cfg.hold_minutes,
                       mturk_hosts=tuple(cfg.mturk_hosts))
        links = write_links(store, base)
        log.info("%d items, k=%d; links in %s.links.json", len(store.items()), store.k, store.path)
        if cfg.platform:
            log.info("  %s workers come in at %s/ext (at most %s of them)", PLATFORMS[cfg.platform][0], base,
                     cfg.max_workers)
        log.info("  admin: %s", links["admin"])
        for name, url in links["annotators"].items():
            log.info("  %s: %s", name, url)
        if not links["annotators"]:
            log.warning("no annotator yet: add one by name on the admin page above (each gets a personal link), "
                        "or start again with \"annotators=[ann1,ann2]\"")
        # Uvicorn catches SIGTERM / SIGINT, stops accepting, finishes the requests in flight, then raises the
        # signal again under the handler it found: these no-op handlers make that a normal return (exit 0)
        stops = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda signum, frame: stops.append(signum))
        uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False)).run(sockets=[sock])
    finally:
        store.close()
        sock.close()
    log.info("stopped")


if __name__ == "__main__":
    main()
