"""What a release stage reads from the repo, computed, never listed by hand: the modules its entry module
imports through any chain (release/imports.py, the package __init__ files on the way, the names a package
exports lazily), the modules its config names by `_target_`, and the config files Hydra composes for its
overrides (the root config and every group option chosen, the experiment file included). An edit to any of
them reruns the stage (release/Snakefile); an edit to a module no stage imports reruns nothing."""
from __future__ import annotations

import ast
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path

from release.imports import closure, entry_modules, module_files, module_graph, source_facts
from release.stamps import RECORD

# the wrapper every stage runs in (release/stage.py: the log, the stamp)
STAGE_WRAPPER = "release.stage"


class StageInputs:
    """files(module, overrides) -> the repo files `python -m release.stage … -- python -m module overrides` reads.

    With a `cache` file (the release folder's .inputs/reads.json), what it read from the repo is kept by content:
    each source file's imports by its text's sha256 (parsed again only when edited) and each composition's files
    and `_target_`s by the digest of every config file and the Hydra version (composed again when any changes).
    The answers are the same; a dry run of the `full` profile took about 3x the time without it."""

    def __init__(self, repo: Path, cache: Path | None = None):
        self.repo = Path(repo).resolve()
        self.cache_file = Path(cache) if cache else None
        kept = _read_cache(self.cache_file)
        self.facts, self.composed = kept.get("facts", {}), kept.get("configs", {})
        self.used_facts: dict = {}  # what this run read: the cache written back holds only that
        self.used_configs: dict = {}
        self.files_of = module_files(self.repo)
        self.graph = module_graph(self.repo, lazy=True, cache=_Recording(self.facts, self.used_facts))
        self._conf_digest = None

    def save(self) -> None:
        """Write the cache back (what this run read, nothing older), whole."""
        if self.cache_file is None:
            return
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"facts": self.used_facts, "configs": self.used_configs}))
        os.replace(tmp, self.cache_file)

    def conf_digest(self) -> str:
        """sha256 over every config file (its path and text) and the Hydra version: what a composition reads."""
        if self._conf_digest is None:
            import hydra

            h = hashlib.sha256(hydra.__version__.encode())
            for path in sorted((self.repo / "conf").rglob("*.yaml")):
                h.update(path.relative_to(self.repo).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
            self._conf_digest = h.hexdigest()
        return self._conf_digest

    def code(self, *modules: str) -> set[str]:
        return closure(self.graph, [m for mod in modules for m in entry_modules(mod, self.graph)])

    def root_config(self, module: str) -> str | None:
        """The config_name of the @hydra.main the entry module runs: in the module (its __main__ for a package)
        or in a module that one imports directly (train/parser/__main__.py -> train/parser/run.py)."""
        entries = entry_modules(module, self.graph)
        for m in [*entries, *sorted({d for e in entries for d in self.graph[e]})]:
            name = _hydra_config_name(self.files_of[m])
            if name:
                return name
        return None

    def configs(self, config_name: str, overrides: list[str]) -> tuple[list[Path], set[str]]:
        """(the config files Hydra composes for these overrides, the `_target_` classes the result names)."""
        from hydra import compose, initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra
        from omegaconf import OmegaConf

        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(self.repo / "conf"), version_base="1.3"):
                cfg = compose(config_name, overrides=list(overrides), return_hydra_config=True)
        except Exception as e:  # noqa: BLE001  (Hydra's errors name the key or file; the stage is added here)
            raise ValueError(f"conf/{config_name}.yaml with {list(overrides)} does not compose: {e}") from e
        finally:
            GlobalHydra.instance().clear()
        files = [self.repo / "conf" / f"{config_name}.yaml"]
        for group, option in cfg.hydra.runtime.choices.items():
            path = self.repo / "conf" / group / f"{option}.yaml"
            if option is not None and not group.startswith("hydra/") and path.is_file():
                files.append(path)
        targets = set(_targets(OmegaConf.to_container(cfg, resolve=False)))
        return files, targets

    def files(self, module: str, overrides: list[str] = ()) -> list[Path]:
        """Code and configs of one stage (the stage wrapper's code included), sorted."""
        modules = self.code(STAGE_WRAPPER, module)
        files: list[Path] = []
        name = self.root_config(module)
        if name:
            configs, targets = self._configs(name, tuple(self._choosing(overrides)))
            files += configs
            modules |= self.code(*{self._module_of(t) for t in targets} - {None})
        return sorted({*files, *(self.files_of[m] for m in modules)})

    def _choosing(self, overrides) -> list[str]:
        """The overrides that can change which files compose or which classes the config names: a config group's
        option (+experiment=X, classifier=Y) or a `_target_`; a plain value (seed=14, parser=PATH) changes neither."""
        groups = {p.name for p in (self.repo / "conf").iterdir() if p.is_dir()}
        return [o for o in overrides if "=" in o and (o.split("=", 1)[0].lstrip("+~") in groups
                                                     or o.split("=", 1)[0].endswith("_target_"))]

    @lru_cache(maxsize=None)
    def _configs(self, config_name: str, overrides: tuple[str, ...]):
        key = hashlib.sha256(json.dumps([self.conf_digest(), config_name, list(overrides)]).encode()).hexdigest()
        if key in self.composed:
            files, targets = self.composed[key]
            found = ([self.repo / f for f in files], set(targets))
        else:
            found = self.configs(config_name, list(overrides))
        self.used_configs[key] = [[p.relative_to(self.repo).as_posix() for p in found[0]], sorted(found[1])]
        return found

    def _module_of(self, target: str) -> str | None:
        """The repo module a `_target_` (module.attr) is imported from; its lazily exported submodule too."""
        parts = target.split(".")
        for k in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:k])
            if mod in self.graph:
                sub = source_facts(self.files_of[mod], _Recording(self.facts, self.used_facts))["lazy"].get(parts[k])
                return f"{mod}.{sub}" if sub and f"{mod}.{sub}" in self.graph else mod
        return None


@lru_cache(maxsize=None)
def _hydra_config_name(path: Path) -> str | None:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "main":
            for kw in node.keywords:
                if kw.arg == "config_name" and isinstance(kw.value, ast.Constant):
                    return kw.value.value
    return None


class _Recording(dict):
    """source_facts's cache over the kept one: a hit or a new entry is recorded in `used` (what is written back)."""

    def __init__(self, kept: dict, used: dict):
        super().__init__()
        self.kept, self.used = kept, used

    def __contains__(self, key) -> bool:
        return key in self.used or key in self.kept

    def __getitem__(self, key):
        if key not in self.used:
            self.used[key] = self.kept[key]
        return self.used[key]

    def __setitem__(self, key, value) -> None:
        self.used[key] = value


def _read_cache(path: Path | None) -> dict:
    """The kept cache, or nothing when there is none or it cannot be read (it is only ever a shortcut)."""
    try:
        kept = json.loads(path.read_text()) if path is not None and path.is_file() else {}
    except (OSError, ValueError):
        return {}
    return kept if isinstance(kept, dict) else {}


def _targets(node):
    if isinstance(node, dict):
        if isinstance(node.get("_target_"), str):
            yield node["_target_"]
        for v in node.values():
            yield from _targets(v)
    elif isinstance(node, list):
        for v in node:
            yield from _targets(v)


# ---------------------------------------------------------------------------- a folder built by another pipeline
def _shown(path: str) -> str:
    """A digest file's name as the file it stands for (.inputs/repo/models/x.py.sha256 -> models/x.py)."""
    return path.split("/", 2)[2].removesuffix(".sha256") if path.startswith(".inputs/") else path


def record_stages(release: Path, inputs: dict[str, list[str]], commands: dict[str, str]) -> None:
    """What each stage reads and runs now; release/stage.py copies its stage's entry into the stamp it writes."""
    path = Path(release) / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({n: {"inputs": sorted(inputs[n]), "command": commands[n]} for n in inputs}, indent=0))


def outdated(release: Path, inputs: dict[str, list[str]], commands: dict[str, str]) -> dict[str, str]:
    """{stage: why} for every finished stage whose stamp was built from other inputs or another command than the
    pipeline gives it now (an older pipeline, an edited profile); a stamp that records neither came from a pipeline
    older than this record and counts as different. Content changes are not here: the digests rerun those."""
    why = {}
    for name in inputs:
        path = Path(release) / "stages" / f"{name}.json"
        if not path.is_file():
            continue
        built = json.loads(path.read_text()).get("built_with")
        if not built:
            why[name] = "its stamp does not record what it read (a folder built by an older pipeline)"
            continue
        before, now = set(built["inputs"]), set(inputs[name])
        parts = []
        if now - before:
            parts.append("reads now " + _listed(sorted(now - before)))
        if before - now:
            parts.append("no longer reads " + _listed(sorted(before - now)))
        if built["command"] != commands[name]:
            parts.append("its command changed")
        if parts:
            why[name] = "; ".join(parts)
    return why


def _listed(paths: list[str], most: int = 4) -> str:
    shown = [_shown(p) for p in paths[:most]]
    return ", ".join(shown) + (f" and {len(paths) - most} more" if len(paths) > most else "")
