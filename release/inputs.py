"""What a release stage reads from the repo, computed, never listed by hand: the modules its entry module
imports through any chain (release/imports.py, the package __init__ files on the way, the names a package
exports lazily), the modules its config names by `_target_`, and the config files Hydra composes for its
overrides (the root config and every group option chosen, the experiment file included). An edit to any of
them reruns the stage (release/Snakefile); an edit to a module no stage imports reruns nothing."""
from __future__ import annotations

import ast
import json
from functools import lru_cache
from pathlib import Path

from release.imports import closure, entry_modules, lazy_exports, module_files, module_graph
from release.stamps import RECORD

# the wrapper every stage runs in (release/stage.py: the log, the stamp)
STAGE_WRAPPER = "release.stage"


class StageInputs:
    """files(module, overrides) -> the repo files `python -m release.stage … -- python -m module overrides` reads."""

    def __init__(self, repo: Path):
        self.repo = Path(repo).resolve()
        self.files_of = module_files(self.repo)
        self.graph = module_graph(self.repo, lazy=True)

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
        return self.configs(config_name, list(overrides))

    def _module_of(self, target: str) -> str | None:
        """The repo module a `_target_` (module.attr) is imported from; its lazily exported submodule too."""
        parts = target.split(".")
        for k in range(len(parts) - 1, 0, -1):
            mod = ".".join(parts[:k])
            if mod in self.graph:
                sub = _lazy_of(self.files_of[mod]).get(parts[k])
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


@lru_cache(maxsize=None)
def _lazy_of(path: Path) -> dict[str, str]:
    return lazy_exports(ast.parse(path.read_text(encoding="utf-8")))


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
