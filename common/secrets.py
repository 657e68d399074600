"""Secrets never leave the machine: one rule for what a secret looks like, and the maskers every
writer uses (model cards, W&B config and command line, the run's log, Hydra's `.hydra/` files).

A key is secret when one of its dotted parts names a token, key, password, secret or auth
(case-insensitive): `hub.token`, `logger.api_key`, `foo.password`, `HF_TOKEN`. Names that only
look alike are not: `tokenizer`, `max_new_tokens`, `bos_token_id`, `exclude_keys`.
Masking replaces the value with `***`; the job itself still gets the real value (only what is
written to disk or sent away is masked).
"""
from __future__ import annotations

import contextlib
import logging
import re
import sys
from pathlib import Path
from typing import Any, Iterable, Iterator

from hydra.experimental.callback import Callback

MASK = "***"

_SECRET_WORD = re.compile(r"token|key|password|passwd|secret|auth", re.IGNORECASE)
# parts of a key that contain a secret word but name no secret
_NOT_SECRET = re.compile(r"tokeni[sz]\w*|\w*_token_ids?|(max|min|num)_\w*tokens|exclude_keys", re.IGNORECASE)


def is_secret_key(key: Any) -> bool:
    """THE rule: does this config key / override key hold a secret?"""
    name = str(key).lstrip("+~").strip()
    return any(_SECRET_WORD.search(part) and not _NOT_SECRET.fullmatch(part)
               for part in re.split(r"[./\[\]]", name) if part)


def _has_value(value: Any) -> bool:
    if isinstance(value, (dict, list, tuple)):
        return len(value) > 0
    return value not in (None, "", "null", "None", "''", '""')


def mask_override(override: str) -> str:
    """`+hub.token=X` -> `+hub.token=***`; anything else (and `~hub.token`) unchanged."""
    key, sep, value = str(override).partition("=")
    if sep and is_secret_key(key) and _has_value(value):
        return f"{key}={MASK}"
    return str(override)


def mask_overrides(overrides: Iterable[str]) -> list[str]:
    return [mask_override(o) for o in overrides]


def secret_values(overrides: Iterable[str]) -> list[str]:
    """The raw values of the secret overrides (and their unquoted form), longest first."""
    out: set[str] = set()
    for o in overrides:
        key, sep, value = str(o).partition("=")
        if sep and is_secret_key(key) and _has_value(value):
            out.add(value)
            if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                out.add(value[1:-1])
    return sorted((v for v in out if len(v) >= 3), key=len, reverse=True)


def scrub_text(text: str, values: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value replaced."""
    for v in values:
        text = text.replace(v, MASK)
    return text


def mask_config(obj: Any) -> Any:
    """A copy of a (nested) dict / list config with every secret key's value masked (a secret key
    holding a dict is masked whole). DictConfig / ListConfig: pass `OmegaConf.to_container` first."""
    if isinstance(obj, dict):
        return {k: (MASK if is_secret_key(k) and _has_value(v) else mask_config(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [mask_config(v) for v in obj]
    return obj


def command_line(module: str, overrides: Iterable[str]) -> str:
    """The command a model card quotes: `python -m MODULE OVERRIDES`, secrets masked."""
    return " ".join(["python -m " + module, *mask_overrides(overrides)])


def task_overrides() -> list[str]:
    """The command line's task overrides of the running Hydra job ([] outside one)."""
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []
    except Exception:
        return []


@contextlib.contextmanager
def masked_argv() -> Iterator[None]:
    """sys.argv with secret overrides masked for the duration (for libraries that record it, W&B)."""
    saved = sys.argv
    sys.argv = [saved[0], *mask_overrides(saved[1:])] if saved else saved
    try:
        yield
    finally:
        sys.argv = saved


class SecretFilter(logging.Filter):
    """Masks the given secret values in every record that passes through a handler."""

    def __init__(self, values: Iterable[str]):
        super().__init__()
        self.values = list(values)

    def filter(self, record: logging.LogRecord) -> bool:
        if self.values:
            msg = record.getMessage()
            clean = scrub_text(msg, self.values)
            if clean != msg:
                record.msg, record.args = clean, None
        return True


class MaskSecretsCallback(Callback):
    """Hydra callback (hydra.callbacks in the root configs): Hydra writes `.hydra/config.yaml`,
    `hydra.yaml` and `overrides.yaml` with the raw overrides just before `on_job_start`; this
    rewrites them masked, masks the secrets in the log handlers, and leaves the job's config alone."""

    def on_job_start(self, config, **kwargs) -> None:
        from omegaconf import OmegaConf

        overrides = list(config.hydra.overrides.task)
        values = secret_values(overrides)
        for handler in logging.getLogger().handlers:
            if not any(isinstance(f, SecretFilter) for f in handler.filters):
                handler.addFilter(SecretFilter(values))
        if config.hydra.output_subdir is None:
            return
        out = Path(config.hydra.runtime.output_dir) / str(config.hydra.output_subdir)
        if not out.is_dir():
            return
        container = OmegaConf.to_container(config, resolve=False)
        hydra_cfg = container.pop("hydra", {})
        hydra_cfg["overrides"] = {k: mask_overrides(v) for k, v in (hydra_cfg.get("overrides") or {}).items()}
        hydra_cfg = mask_config(hydra_cfg)
        files = {"config.yaml": mask_config(container), "hydra.yaml": {"hydra": hydra_cfg},
                 "overrides.yaml": mask_overrides(overrides)}
        for name, data in files.items():
            text = OmegaConf.to_yaml(OmegaConf.create(data))
            (out / name).write_text(scrub_text(text, values), encoding="utf-8")
        if str(config.hydra.mode).endswith("MULTIRUN"):
            sweep = Path(str(config.hydra.sweep.dir)) / "multirun.yaml"
            if sweep.is_file():
                sweep.write_text(scrub_text(sweep.read_text(encoding="utf-8"), values), encoding="utf-8")
