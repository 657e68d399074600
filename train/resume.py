"""The one resume rule of every trainer (train.parser, train.predicates, train.entailment, train.contradiction),
parsed here and nowhere else:

- `resume=auto`: continue. A trainer of one model resumes from the newest complete checkpoint in its run dir;
  a trainer of stages reuses each finished stage, and an unfinished one resumes from its newest complete
  Trainer checkpoint, or is refused, saying why (it is never trained again from its start without a word).
- `resume=never`: start afresh; what an earlier run left is moved aside (train.parser, train.predicates, the
  pair encoder's stages) or its stages forgotten (train.entailment), as each trainer's docstring says.
- `resume=PATH`: continue from that checkpoint, which must be a complete checkpoint of this run's model
  (the same weights by name and shape); anything else is refused, naming both.
"""
from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CHOICES = "resume=auto (continue from what the run dir holds) | resume=never (start afresh) | resume=PATH (that checkpoint)"
# the values older versions took: each now a clear error naming the new one
RENAMED = {"none": "never", "null": "never", "false": "never", "": "never"}
BEGUN_FILE = "stage_begun.json"
CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")


class ResumeError(ValueError):
    """A resume setting, or a run dir, that cannot be resumed as asked."""


class CheckpointNotFoundError(ResumeError, FileNotFoundError):
    """resume=PATH names no folder."""


@dataclass(frozen=True)
class Resume:
    mode: str                 # auto | never | path
    path: Path | None = None  # mode path: the checkpoint

    @property
    def fresh(self) -> bool:
        return self.mode == "never"


def parse_resume(value) -> Resume:
    """The `resume` setting of a trainer's config as a Resume."""
    if value == "auto":
        return Resume("auto")
    if value == "never":
        return Resume("never")
    text = "" if value is None or value is False else str(value)
    if text.lower() in RENAMED or value is True:
        new = RENAMED.get(text.lower(), "auto")
        raise ResumeError(f"resume={value!r} is not a resume setting: use resume={new}. One of {CHOICES}")
    return Resume("path", Path(text))


def refuse_path_for_stages(resume: Resume, trainer: str, where: str) -> None:
    """A trainer of several stages resumes each from its own checkpoints: a single PATH names none of them."""
    if resume.mode == "path":
        raise ResumeError(f"resume={resume.path}: {trainer} trains several stages, each resuming from its own Trainer "
                          f"checkpoints ({where}), so one checkpoint cannot stand for them; use resume=auto "
                          "(or resume=never to start afresh)")


def _weight_shapes(checkpoint: Path) -> dict[str, tuple] | None:
    """{weight name: shape} of a checkpoint's safetensors files (headers only), or None when it has none."""
    from safetensors import safe_open

    index = checkpoint / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (checkpoint / "model.safetensors").is_file():
        files = ["model.safetensors"]
    else:
        return None
    shapes = {}
    for name in files:
        with safe_open(str(checkpoint / name), "pt") as f:
            for key in f.keys():
                shapes[key] = tuple(f.get_slice(key).get_shape())
    return shapes


def _describe(model) -> str:
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", None) or type(model).__name__
    n = sum(p.numel() for p in model.parameters())
    return f"{type(model).__name__} ({kind}, {n:,} weights)"


def check_checkpoint_of(checkpoint: Path, model) -> None:
    """Refuse `checkpoint` unless it is a complete Trainer checkpoint of `model`: every weight it saved is one of
    the model's with the same shape, and every weight of the model is saved (or tied to a saved one)."""
    checkpoint = Path(checkpoint)
    mine = f"this run's model, a {_describe(model)}"
    if not checkpoint.is_dir():
        raise CheckpointNotFoundError(f"resume={checkpoint}: no such checkpoint folder (for {mine})")
    if not is_complete(checkpoint):
        raise ResumeError(f"resume={checkpoint}: not a complete Trainer checkpoint (no readable trainer_state.json), "
                          f"so not one to resume {mine} from")
    if (checkpoint / "adapter_model.safetensors").is_file():
        return  # a LoRA adapter's checkpoint: PEFT checks its weights against the base model as it loads them
    saved = _weight_shapes(checkpoint)
    if saved is None:
        raise ResumeError(f"resume={checkpoint}: holds no model.safetensors, so it is not a checkpoint of {mine}")
    state = model.state_dict()
    by_storage: dict = {}
    for name, tensor in state.items():
        by_storage.setdefault((tensor.data_ptr(), tuple(tensor.shape)), []).append(name)
    wrong = [f"{k} {v} (this model: {tuple(state[k].shape) if k in state else 'no such weight'})"
             for k, v in saved.items() if k not in state or tuple(state[k].shape) != v]
    unsaved = [names[0] for names in by_storage.values() if not any(n in saved for n in names)]
    if wrong or unsaved:
        other = json.loads((checkpoint / "config.json").read_text()).get("model_type", "?") \
            if (checkpoint / "config.json").is_file() else "?"
        detail = "; ".join(wrong[:3] + [f"{k} not saved" for k in unsaved[:3]])
        raise ResumeError(f"resume={checkpoint} is a checkpoint of another model ({other}, {len(saved)} weights), not "
                          f"of {mine}: {detail}{' ...' if len(wrong) + len(unsaved) > 3 else ''}")


def begin_stage(out_dir: Path, resume: Resume, what: str) -> str | None:
    """Enter a stage's Trainer folder: the checkpoint to resume it from (None: it starts here). A stage that an
    earlier run began (its BEGUN_FILE) and left without a complete checkpoint is refused: continuing it is
    impossible, and training it again from its start would do so without a word."""
    out_dir = Path(out_dir)
    checkpoint = last_complete_checkpoint(out_dir) if resume.mode == "auto" else None
    if (out_dir / BEGUN_FILE).exists() and checkpoint is None:
        begun = json.loads((out_dir / BEGUN_FILE).read_text())
        raise ResumeError(
            f"{out_dir}: {what} was begun by an earlier run ({begun.get('note', '')}) and left no complete checkpoint, "
            "so it cannot resume. Delete that folder to train this stage again from its start, or use resume=never "
            "to start the whole run afresh.")
    out_dir.mkdir(parents=True, exist_ok=True)
    if checkpoint:
        log.info("%s: resuming from %s", what, checkpoint)
    else:
        (out_dir / BEGUN_FILE).write_text(json.dumps({"note": note_of(out_dir)}))
    return checkpoint


def note_of(out_dir: Path) -> str:
    import time

    return f"begun {time.strftime('%Y-%m-%d %H:%M:%S')}; its checkpoints go to {out_dir}"


def is_complete(checkpoint: Path) -> bool:
    """The Trainer writes trainer_state.json after the weights, optimizer and RNG state."""
    try:
        json.loads((checkpoint / "trainer_state.json").read_text())
        return True
    except (OSError, ValueError):
        return False


def last_complete_checkpoint(output_dir: Path) -> str | None:
    """The newest complete checkpoint-N in `output_dir`; a warning for each newer incomplete one."""
    if not output_dir.is_dir():
        return None
    found = sorted(((int(m.group(1)), p) for p in output_dir.iterdir()
                    if p.is_dir() and (m := CHECKPOINT_RE.match(p.name))), reverse=True)
    for _, path in found:
        if is_complete(path):
            return str(path)
        log.warning("%s is incomplete (no readable trainer_state.json: the run was stopped while saving it); "
                    "looking for an earlier one", path)
    return None
