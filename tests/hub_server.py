"""A small, real HTTP server on 127.0.0.1 that speaks enough of the Hugging Face Hub API for
`huggingface_hub` (2.x, plain HTTP path: `HF_HUB_DISABLE_XET=1` or `hf_xet` not installed) to create a
repo, upload a folder (regular and LFS files), read repo info / the file tree and download files.

It is not a mock: the client library talks HTTP to it exactly as it talks to huggingface.co, and the
server keeps an in-memory git-like history (commits on branches, LFS objects by sha256) that a test
inspects through the returned `HubStore`.

Endpoints (`{type}` is `models`, `datasets` or `spaces`; `{prefix}` is ``""``, ``datasets/`` or
``spaces/``; `{repo}` is ``namespace/name``; `{rev}` a branch (``main``), ``refs/pr/N`` (URL-quoted)
or a 40-hex commit id):

- ``POST /api/repos/create`` (``HfApi.create_repo``): JSON ``{name, organization, visibility|private,
  type}``; 200 ``{"url": ...}`` with an initial commit holding a ``.gitattributes`` (as the Hub does),
  409 if the repo exists (``exist_ok=True`` swallows it).
- ``POST /api/validate-yaml`` (called by ``upload_folder``/``create_commit`` when README.md is pushed):
  parses the YAML front matter; 200 ``{"errors": [], "warnings": []}`` or 400 with the errors.
- ``POST /api/{type}/{repo}/preupload/{rev}``: ``{"files": [{path, sample, size}]}`` ->
  ``{"files": [{path, uploadMode: "lfs"|"regular", shouldIgnore: false, oid}], "commitOid"}``.
  LFS when the name matches a ``filter=lfs`` pattern of the repo's ``.gitattributes``, the sample
  holds a NUL byte, or the size is >= 10 MiB. ``oid`` is the remote file's id (sha256 for LFS, git
  blob sha1 otherwise) so that unchanged files are skipped by the client.
- ``POST /{prefix}{repo}.git/info/lfs/objects/batch`` (git-lfs batch API, ``basic`` transfer):
  returns for each object an ``upload`` action (``PUT /lfs-upload/{sha256}``) and a ``verify``
  action (``POST /lfs-verify``), or no action when the object is already stored.
- ``PUT /lfs-upload/{sha256}``: the raw bytes (Content-Length or chunked); 400 if the sha256 or the
  size does not match. ``POST /lfs-verify``: ``{oid, size}``; 404 if the object is not stored.
- ``POST /api/{type}/{repo}/commit/{rev}`` (``application/x-ndjson``): a ``header`` line
  (``summary``, ``description``, optional ``parentCommit`` -> 412 if stale), then ``file``
  (base64 content), ``lfsFile`` (``oid``/``size`` of an uploaded LFS object, else 400),
  ``deletedFile`` and ``deletedFolder`` lines. ``?create_pr=1`` commits on a new ``refs/pr/N``.
  200 ``{"success", "commitOid", "commitUrl", "pullRequestUrl"}``. ``store.fail_commits = True``
  makes it answer 500 (without committing anything).
- ``GET /api/{type}/{repo}`` and ``GET /api/{type}/{repo}/revision/{rev}`` (``model_info``,
  ``repo_info``, ``snapshot_download``): ``{id, sha, private, siblings, cardData, model-index,
  tags, lastModified, ...}``; with ``?blobs=true`` the siblings carry size/blobId/lfs.
- ``GET /api/{type}/{repo}/tree/{rev}[/{path}]?recursive=&expand=`` (``list_repo_tree``,
  ``list_repo_files``, ``snapshot_download``): a JSON list of ``{type: file|directory, path, oid,
  size, lfs?}`` (one page, no ``Link`` header).
- ``HEAD``/``GET /{prefix}{repo}/resolve/{rev}/{path}`` (``hf_hub_download``): the bytes (``Range:
  bytes=a-[b]`` gives 206), with ``ETag`` (git blob sha1, or sha256 for LFS files, also as
  ``X-Linked-Etag``/``X-Linked-Size``), ``X-Repo-Commit``, ``Content-Length``, ``Accept-Ranges``.
- ``GET /api/whoami-v2``: a fixed user (``user``), the default namespace of ``create_repo``.

Errors carry ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``) and a JSON
``{"error": ...}`` body, which ``huggingface_hub`` turns into its typed exceptions. Write endpoints
need an ``Authorization: Bearer <token>`` header (any token, or exactly ``token=`` when given);
private repos are invisible (404 RepoNotFound) without one. Anything else answers 404 and is
recorded in ``store.unhandled``; every request is recorded in ``store.requests``.
"""
from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
import shutil
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

DEFAULT_USER = "user"
LFS_SIZE_THRESHOLD = 10 * 1024 * 1024
DEFAULT_GITATTRIBUTES = b"".join(
    f"{pattern} filter=lfs diff=lfs merge=lfs -text\n".encode()
    for pattern in ("*.7z", "*.bin", "*.ckpt", "*.gz", "*.h5", "*.msgpack", "*.npy", "*.npz", "*.onnx",
                    "*.ot", "*.parquet", "*.pb", "*.pickle", "*.pkl", "*.pt", "*.pth", "*.safetensors",
                    "*.tar", "*.tflite", "*.zip", "*.zst", "*tfevents*")
)
REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
URL_PREFIXES = {"model": "", "dataset": "datasets/", "space": "spaces/"}


def git_blob_sha1(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def lfs_pointer(sha256: str, size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha256}\nsize {size}\n".encode()


@dataclass(frozen=True)
class StoredFile:
    content: bytes
    lfs: bool

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def size(self) -> int:
        return len(self.content)

    @property
    def blob_id(self) -> str:
        """The git object id: of the pointer file for LFS files, as on the Hub."""
        return git_blob_sha1(lfs_pointer(self.sha256, self.size) if self.lfs else self.content)

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.blob_id


@dataclass
class Commit:
    oid: str
    summary: str
    description: str
    parent: str | None
    files: dict[str, StoredFile]
    date: datetime


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    private: bool
    commits: dict[str, Commit] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)  # branch or refs/pr/N -> commit oid
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def resolve(self, revision: str) -> Commit | None:
        if revision in self.refs:
            return self.commits[self.refs[revision]]
        if re.fullmatch(r"[0-9a-f]{40}", revision):
            return self.commits.get(revision)
        return None

    @property
    def history(self) -> list[Commit]:
        """Commits on main, oldest first."""
        out, oid = [], self.refs.get("main")
        while oid is not None:
            out.append(self.commits[oid])
            oid = self.commits[oid].parent
        return out[::-1]


class HubError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}


class HubStore:
    """What the server holds. Thread-safe; read it from the test."""

    def __init__(self, *, fail_commits: bool = False, token: str | None = None, mirror_dir: Path | None = None):
        self.endpoint = ""
        self.fail_commits = fail_commits
        self.token = token
        self.mirror_dir = mirror_dir
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lfs_objects: dict[str, bytes] = {}
        self.requests: list[tuple[str, str]] = []
        self.unhandled: list[tuple[str, str]] = []
        self.lock = threading.RLock()
        self._counter = 0

    # -- inspection helpers for tests --------------------------------------------------------------
    def repo(self, repo_id: str, repo_type: str = "model") -> Repo:
        return self.repos[(repo_type, repo_id)]

    def files(self, repo_id: str, revision: str = "main", repo_type: str = "model") -> dict[str, bytes]:
        """{path: content} at `revision` (LFS files resolved to their content)."""
        with self.lock:
            commit = self.repo(repo_id, repo_type).resolve(revision)
            if commit is None:
                raise KeyError(f"{repo_id}@{revision}")
            return {path: f.content for path, f in commit.files.items()}

    def lfs_paths(self, repo_id: str, revision: str = "main", repo_type: str = "model") -> set[str]:
        with self.lock:
            commit = self.repo(repo_id, repo_type).resolve(revision)
            return {path for path, f in commit.files.items() if f.lfs}

    def commits(self, repo_id: str, repo_type: str = "model") -> list[Commit]:
        with self.lock:
            return self.repo(repo_id, repo_type).history

    def requested(self, method: str, pattern: str) -> list[str]:
        """Paths of recorded requests with `method` whose path matches the regex `pattern`."""
        return [p for m, p in self.requests if m == method and re.search(pattern, p)]

    # -- internals ---------------------------------------------------------------------------------
    def _new_oid(self, *parts: str) -> str:
        self._counter += 1
        return hashlib.sha1("\0".join((str(self._counter), str(time.time_ns()), *parts)).encode()).hexdigest()

    def _commit(self, repo: Repo, ref: str, parent: Commit | None, files: dict[str, StoredFile],
                summary: str, description: str = "") -> Commit:
        oid = self._new_oid(repo.repo_id, ref, summary, *sorted(f"{p}:{f.etag}" for p, f in files.items()))
        commit = Commit(oid=oid, summary=summary, description=description,
                        parent=parent.oid if parent else None, files=files, date=datetime.now(timezone.utc))
        repo.commits[oid] = commit
        repo.refs[ref] = oid
        if ref == "main":
            self._mirror(repo, commit)
        return commit

    def _mirror(self, repo: Repo, commit: Commit) -> None:
        """Write the head of main to mirror_dir/{type}s/{repo_id}/ (a checkout the test can diff)."""
        if self.mirror_dir is None:
            return
        target = Path(self.mirror_dir) / f"{repo.repo_type}s" / repo.repo_id
        if target.exists():
            shutil.rmtree(target)
        for path, f in commit.files.items():
            dest = target / path
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(f.content)

    def mirror_path(self, repo_id: str, repo_type: str = "model") -> Path:
        if self.mirror_dir is None:
            raise ValueError("the server was started without a mirror directory")
        return Path(self.mirror_dir) / f"{repo_type}s" / repo_id


def _card_metadata(readme: bytes) -> dict:
    text = readme.decode("utf-8", errors="replace")
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.DOTALL)
    if not match:
        return {}
    data = yaml.safe_load(match.group(1))
    return data if isinstance(data, dict) else {}


def _iso(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _lfs_patterns(files: dict[str, StoredFile]) -> list[str]:
    attrs = files.get(".gitattributes")
    if attrs is None:
        return []
    out = []
    for line in attrs.content.decode("utf-8", errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 2 and not parts[0].startswith("#") and "filter=lfs" in parts[1:]:
            out.append(parts[0])
    return out


def _is_lfs(path: str, size: int, sample: bytes, patterns: list[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    if any(fnmatch.fnmatch(name, p) or fnmatch.fnmatch(path, p) for p in patterns):
        return True
    return size >= LFS_SIZE_THRESHOLD or b"\0" in sample


def make_handler(store: HubStore) -> type[BaseHTTPRequestHandler]:
    repo_re = r"(?P<repo>[^/]+/[^/]+)"

    class HubHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects; every response has Content-Length
        timeout = 30
        server_version = "TinyHub/0.1"

        def log_message(self, format, *args):  # noqa: A002 - keep pytest output quiet
            pass

        # -- plumbing ------------------------------------------------------------------------------
        def _read_body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
                return b"".join(chunks)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _send(self, status: int, body: bytes = b"", headers: dict | None = None,
                  content_type: str = "application/json", head: bool = False,
                  length: int | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body) if length is None else length))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if not head and body:
                self.wfile.write(body)

        def _json(self, status: int, obj, headers: dict | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), headers)

        def _token(self) -> str | None:
            auth = self.headers.get("Authorization", "")
            return auth[7:].strip() if auth.lower().startswith("bearer ") else None

        def _require_token(self) -> None:
            token = self._token()
            if token is None:
                raise HubError(401, "You must be authenticated to access this resource")
            if store.token is not None and token != store.token:
                raise HubError(401, "Invalid credentials in Authorization header",
                               headers={"X-Error-Message": "Invalid credentials in Authorization header"})

        def _repo(self, repo_type: str, repo_id: str) -> Repo:
            repo = store.repos.get((repo_type, repo_id))
            if repo is None or (repo.private and self._token() is None):
                raise HubError(404, "Repository not found", "RepoNotFound")
            return repo

        def _commit_at(self, repo: Repo, revision: str) -> Commit:
            commit = repo.resolve(revision)
            if commit is None:
                raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
            return commit

        def _dispatch(self, method: str) -> None:
            split = urlsplit(self.path)
            path, query = split.path, parse_qs(split.query)
            with store.lock:
                store.requests.append((method, path))
            body = self._read_body() if method in ("POST", "PUT") else b""
            try:
                for route_method, pattern, handler in ROUTES:
                    if route_method == method or (route_method == "GET" and method == "HEAD"):
                        match = re.fullmatch(pattern, path)
                        if match:
                            with store.lock:
                                handler(self, method, match, query, body)
                            return
                with store.lock:
                    store.unhandled.append((method, path))
                raise HubError(404, f"no route for {method} {path}")
            except HubError as e:
                headers = dict(e.headers)
                if e.code:
                    headers["X-Error-Code"] = e.code
                headers.setdefault("X-Error-Message", e.message)
                self._send(e.status, json.dumps({"error": e.message}).encode(), headers, head=method == "HEAD")
            except Exception as e:  # a bug in the server: say so loudly to the client
                self._send(500, json.dumps({"error": f"test hub server error: {type(e).__name__}: {e}"}).encode())
                raise

        def do_GET(self):
            self._dispatch("GET")

        def do_HEAD(self):
            self._dispatch("HEAD")

        def do_POST(self):
            self._dispatch("POST")

        def do_PUT(self):
            self._dispatch("PUT")

        # -- endpoints -----------------------------------------------------------------------------
        def whoami(self, method, match, query, body):
            self._require_token()
            self._json(200, {"type": "user", "name": DEFAULT_USER, "fullname": "Test User", "orgs": [],
                             "auth": {"type": "access_token", "accessToken": {"role": "write"}}})

        def create_repo(self, method, match, query, body):
            self._require_token()
            payload = json.loads(body or b"{}")
            repo_type = payload.get("type") or "model"
            if repo_type not in URL_PREFIXES:
                raise HubError(400, f"invalid repo type {repo_type!r}")
            name = payload.get("name")
            if not name or "/" in name:
                raise HubError(400, f"invalid repo name {name!r}")
            repo_id = f"{payload.get('organization') or DEFAULT_USER}/{name}"
            url = f"{store.endpoint}/{URL_PREFIXES[repo_type]}{repo_id}"
            if (repo_type, repo_id) in store.repos:
                self._json(409, {"error": "You already created this model repo", "url": url})
                return
            private = payload.get("visibility", "private" if payload.get("private") else "public") != "public"
            repo = Repo(repo_id=repo_id, repo_type=repo_type, private=private)
            store.repos[(repo_type, repo_id)] = repo
            store._commit(repo, "main", None, {".gitattributes": StoredFile(DEFAULT_GITATTRIBUTES, False)},
                          "initial commit")
            self._json(200, {"url": url, "name": repo_id, "id": repo_id})

        def validate_yaml(self, method, match, query, body):
            payload = json.loads(body or b"{}")
            try:
                _card_metadata(payload.get("content", "").encode())
            except yaml.YAMLError as e:
                self._json(400, {"errors": [{"message": f"Invalid YAML: {e}"}], "warnings": []})
                return
            self._json(200, {"errors": [], "warnings": []})

        def preupload(self, method, match, query, body):
            self._require_token()
            repo = self._repo(REPO_TYPES[match["type"]], match["repo"])
            commit = self._commit_at(repo, unquote(match["rev"]))
            patterns = _lfs_patterns(commit.files)
            out = []
            for f in json.loads(body)["files"]:
                sample = base64.b64decode(f.get("sample", ""))
                lfs = _is_lfs(f["path"], int(f["size"]), sample, patterns)
                remote = commit.files.get(f["path"])
                oid = None
                if remote is not None and remote.lfs == lfs:
                    oid = remote.sha256 if lfs else remote.blob_id
                out.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular",
                            "shouldIgnore": False, "oid": oid})
            self._json(200, {"files": out, "commitOid": commit.oid})

        def lfs_batch(self, method, match, query, body):
            self._require_token()
            repo_type = REPO_TYPES[match["type"] + "s"] if match["type"] else "model"
            self._repo(repo_type, match["repo"])
            payload = json.loads(body)
            if payload.get("operation") != "upload":
                raise HubError(400, "only the upload operation is implemented")
            objects = []
            for obj in payload.get("objects", []):
                oid, size = obj["oid"], int(obj["size"])
                entry = {"oid": oid, "size": size, "authenticated": True}
                if oid not in store.lfs_objects:
                    entry["actions"] = {
                        "upload": {"href": f"{store.endpoint}/lfs-upload/{oid}", "header": {}},
                        "verify": {"href": f"{store.endpoint}/lfs-verify", "header": {}},
                    }
                objects.append(entry)
            self._send(200, json.dumps({"transfer": "basic", "objects": objects}).encode(),
                       content_type="application/vnd.git-lfs+json")

        def lfs_upload(self, method, match, query, body):
            oid = match["oid"]
            if hashlib.sha256(body).hexdigest() != oid:
                raise HubError(400, f"uploaded content does not hash to {oid}")
            store.lfs_objects[oid] = body
            self._send(200, b"", content_type="text/plain")

        def lfs_verify(self, method, match, query, body):
            self._require_token()
            payload = json.loads(body)
            content = store.lfs_objects.get(payload["oid"])
            if content is None:
                raise HubError(404, f"LFS object {payload['oid']} not found")
            if len(content) != int(payload["size"]):
                raise HubError(400, f"LFS object {payload['oid']} has size {len(content)}, not {payload['size']}")
            self._json(200, {"success": True})

        def commit(self, method, match, query, body):
            self._require_token()
            repo = self._repo(REPO_TYPES[match["type"]], match["repo"])
            revision = unquote(match["rev"])
            head = self._commit_at(repo, revision)
            if store.fail_commits:
                raise HubError(500, "Internal Error - simulated commit failure (fail_commits=True)")
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            if not lines or lines[0].get("key") != "header":
                raise HubError(400, "the first line of a commit payload must be its header")
            header = lines[0]["value"]
            parent = header.get("parentCommit")
            if parent is not None and not head.oid.startswith(parent):
                raise HubError(412, f"parent commit {parent} is not the head of {revision} ({head.oid})")
            files = dict(head.files)
            for line in lines[1:]:
                key, value = line["key"], line["value"]
                path = value["path"]
                if key == "file":
                    if value.get("encoding", "base64") != "base64":
                        raise HubError(400, f"unsupported encoding {value.get('encoding')!r}")
                    files[path] = StoredFile(base64.b64decode(value["content"]), False)
                elif key == "lfsFile":
                    content = store.lfs_objects.get(value["oid"])
                    if content is None:
                        raise HubError(400, f"LFS object {value['oid']} of {path} was never uploaded")
                    if "size" in value and int(value["size"]) != len(content):
                        raise HubError(400, f"LFS object {value['oid']} of {path} has another size")
                    files[path] = StoredFile(content, True)
                elif key == "deletedFile":
                    if path not in files:
                        raise HubError(404, "A file with this name doesn't exist", "EntryNotFound")
                    del files[path]
                elif key == "deletedFolder":
                    prefix = path.rstrip("/") + "/"
                    gone = [p for p in files if p.startswith(prefix)]
                    if not gone:
                        raise HubError(404, "A folder with this name doesn't exist", "EntryNotFound")
                    for p in gone:
                        del files[p]
                else:
                    raise HubError(400, f"unsupported commit operation {key!r}")
            prefix = URL_PREFIXES[repo.repo_type]
            pr_url = None
            ref = revision if revision in repo.refs else "main"
            if query.get("create_pr", ["0"])[0] in ("1", "true", "True"):
                number = 1 + sum(r.startswith("refs/pr/") for r in repo.refs)
                ref = f"refs/pr/{number}"
                pr_url = f"{store.endpoint}/{prefix}{repo.repo_id}/discussions/{number}"
            elif revision not in repo.refs:
                raise HubError(400, f"cannot commit on {revision}: not a branch")
            new = store._commit(repo, ref, head, files, header.get("summary", ""), header.get("description", ""))
            self._json(200, {"success": True, "commitOid": new.oid,
                             "commitUrl": f"{store.endpoint}/{prefix}{repo.repo_id}/commit/{new.oid}",
                             "pullRequestUrl": pr_url, "hookOutput": ""})

        def repo_info(self, method, match, query, body):
            repo = self._repo(REPO_TYPES[match["type"]], match["repo"])
            commit = self._commit_at(repo, unquote(match["rev"]) if match["rev"] else "main")
            blobs = query.get("blobs", ["false"])[0].lower() in ("1", "true")
            siblings = []
            for path, f in sorted(commit.files.items()):
                s = {"rfilename": path}
                if blobs:
                    s.update(size=f.size, blobId=f.blob_id)
                    if f.lfs:
                        s["lfs"] = {"size": f.size, "sha256": f.sha256,
                                    "pointerSize": len(lfs_pointer(f.sha256, f.size))}
                siblings.append(s)
            card = _card_metadata(commit.files["README.md"].content) if "README.md" in commit.files else {}
            info = {"_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24], "id": repo.repo_id,
                    "author": repo.repo_id.split("/")[0], "sha": commit.oid, "private": repo.private,
                    "disabled": False, "gated": False, "downloads": 0, "likes": 0,
                    "lastModified": _iso(commit.date), "createdAt": _iso(repo.created_at),
                    "tags": list(card.get("tags") or []), "siblings": siblings, "cardData": card or None}
            if repo.repo_type == "model":
                info["modelId"] = repo.repo_id
                info["library_name"] = card.get("library_name")
                if card.get("model-index"):
                    info["model-index"] = card["model-index"]
            self._json(200, info)

        def tree(self, method, match, query, body):
            repo = self._repo(REPO_TYPES[match["type"]], match["repo"])
            commit = self._commit_at(repo, unquote(match["rev"]))
            base = unquote(match["path"] or "").strip("/")
            recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
            prefix = f"{base}/" if base else ""
            under = {p: f for p, f in commit.files.items() if p.startswith(prefix)}
            if base and not under:
                if base in commit.files:
                    raise HubError(400, f"{base} is a file, not a folder")
                raise HubError(404, f"{base} does not exist at {commit.oid}", "EntryNotFound",
                               {"X-Repo-Commit": commit.oid})
            entries: dict[str, dict] = {}
            for path, f in under.items():
                rel = path[len(prefix):].split("/")
                dirs = [prefix + "/".join(rel[:i]) for i in range(1, len(rel))]
                for d in dirs if recursive else dirs[:1]:
                    entries.setdefault(d, {"type": "directory", "oid": git_blob_sha1(d.encode()), "size": 0,
                                           "path": d})
                if recursive or len(rel) == 1:
                    entry = {"type": "file", "oid": f.blob_id, "size": f.size, "path": path}
                    if f.lfs:
                        entry["lfs"] = {"oid": f.sha256, "size": f.size,
                                        "pointerSize": len(lfs_pointer(f.sha256, f.size))}
                    entries[path] = entry
            self._json(200, [entries[k] for k in sorted(entries)])

        def resolve(self, method, match, query, body):
            repo_type = REPO_TYPES[match["type"] + "s"] if match["type"] else "model"
            repo = self._repo(repo_type, match["repo"])
            commit = self._commit_at(repo, unquote(match["rev"]))
            path = unquote(match["path"])
            f = commit.files.get(path)
            if f is None:
                raise HubError(404, f"{path} does not exist at {commit.oid}", "EntryNotFound",
                               {"X-Repo-Commit": commit.oid})
            headers = {"ETag": f'"{f.etag}"', "X-Repo-Commit": commit.oid, "Accept-Ranges": "bytes",
                       "Content-Disposition": f'inline; filename="{path.rsplit("/", 1)[-1]}"'}
            if f.lfs:
                headers.update({"X-Linked-Etag": f'"{f.sha256}"', "X-Linked-Size": str(f.size)})
            content, status = f.content, 200
            range_header = self.headers.get("Range")
            if range_header:
                m = re.fullmatch(r"bytes=(\d+)-(\d*)", range_header.strip())
                if not m:
                    raise HubError(416, f"unsupported Range {range_header!r}")
                start = int(m[1])
                end = int(m[2]) if m[2] else f.size - 1
                if start >= f.size and f.size:
                    raise HubError(416, "Range Not Satisfiable", headers={"Content-Range": f"bytes */{f.size}"})
                content, status = f.content[start:end + 1], 206
                headers["Content-Range"] = f"bytes {start}-{start + len(content) - 1}/{f.size}"
            self._send(status, content, headers, content_type="application/octet-stream",
                       head=method == "HEAD")

    types = "(?P<type>models|datasets|spaces)"
    ROUTES = [
        ("GET", r"/api/whoami-v2", HubHandler.whoami),
        ("POST", r"/api/repos/create", HubHandler.create_repo),
        ("POST", r"/api/validate-yaml", HubHandler.validate_yaml),
        ("POST", rf"/api/{types}/{repo_re}/preupload/(?P<rev>[^/]+)", HubHandler.preupload),
        ("POST", rf"/api/{types}/{repo_re}/commit/(?P<rev>[^/]+)", HubHandler.commit),
        ("GET", rf"/api/{types}/{repo_re}/tree/(?P<rev>[^/]+)(?P<path>/.*)?", HubHandler.tree),
        ("GET", rf"/api/{types}/{repo_re}(?:/revision/(?P<rev>[^/]+))?", HubHandler.repo_info),
        ("POST", rf"/(?:(?P<type>dataset|space)s/)?{repo_re}\.git/info/lfs/objects/batch", HubHandler.lfs_batch),
        ("PUT", r"/lfs-upload/(?P<oid>[0-9a-f]{64})", HubHandler.lfs_upload),
        ("POST", r"/lfs-verify", HubHandler.lfs_verify),
        ("GET", rf"/(?:(?P<type>dataset|space)s/)?{repo_re}/resolve/(?P<rev>[^/]+)/(?P<path>.+)", HubHandler.resolve),
    ]
    return HubHandler


@contextmanager
def run_hub_server(tmp_path: Path | None = None, fail_commits: bool = False, token: str | None = None):
    """Start the server on 127.0.0.1 (a free port) in a thread; yield (endpoint_url, store).

    `tmp_path`: if given, the head of `main` of every repo is also written, after each commit, under
    `tmp_path/hub-server/{type}s/{namespace}/{name}/` (see `store.mirror_path`). `fail_commits`:
    the commit endpoint answers 500 (toggle later with `store.fail_commits`). `token`: if given, only
    this bearer token is accepted by the write endpoints (any token otherwise).
    """
    mirror = Path(tmp_path) / "hub-server" if tmp_path is not None else None
    store = HubStore(fail_commits=fail_commits, token=token, mirror_dir=mirror)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(store))
    server.daemon_threads = True
    store.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="test-hub-server", daemon=True)
    thread.start()
    try:
        yield store.endpoint, store
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def use_hub_endpoint(monkeypatch, endpoint: str, cache_dir: Path, token: str = "dummy") -> None:
    """Point huggingface_hub (already imported, constants read at import) at `endpoint`, online, over
    plain HTTP (no Xet), with `token`, caching downloads under `cache_dir`; all undone by monkeypatch."""
    from huggingface_hub import constants, hf_api
    from huggingface_hub.utils import close_session

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HUGGINGFACE_CO_STAGING"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_TOKEN", token)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache_dir))
    monkeypatch.setattr(constants, "ENDPOINT", endpoint)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", endpoint + "/{repo_id}/resolve/{revision}/{filename}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache_dir))
    if hasattr(constants, "HUGGINGFACE_HUB_CACHE"):
        monkeypatch.setattr(constants, "HUGGINGFACE_HUB_CACHE", str(cache_dir))
    monkeypatch.setattr(hf_api.api, "endpoint", endpoint)  # the module-level HfApi behind hf_api.model_info etc.
    close_session()  # no pooled keep-alive connection to a previous server
