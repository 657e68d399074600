"""Entailment checkpoints on disk: the format file, and a scorer rebuilt from a folder alone.

A trained checkpoint folder holds the weights, the tokenizer and `entailment_format.json`
({family, max_length, chunk_words, chunk_overlap, prompt, ...}); `load_scorer(folder)` rebuilds the
scorer from it alone. A LoRA adapter folder (adapter_config.json) names its `base_model`; a
zero-shot descriptor folder holds no weights and names its `base_model`; a `stacked` folder holds
the regression and, in `neural/`, the neural checkpoint it uses. The family is a name, not an
import path (models.entailment.neural.SCORER_CLASSES maps it to the class), so saved and pushed
checkpoints outlive a module move.
"""
from __future__ import annotations

import json
from pathlib import Path

from models.checkpoint import checkpoint_folder
from models.entailment.neural import NeuralScorer, model_class, scorer_class
from models.entailment.scorers import EmbeddingScorer
from models.entailment.stacked import StackedScorer
from models.entailment.structure import ReferenceStructure
from models.model_paths import resolve_model_path

FORMAT_FILE = "entailment_format.json"


def save_format(folder: str | Path, fmt: dict) -> Path:
    """Write a checkpoint's entailment_format.json (what load_scorer rebuilds the scorer from)."""
    path = Path(folder) / FORMAT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fmt, indent=1))
    return path


def load_format(folder: str | Path) -> dict:
    """A checkpoint folder's entailment_format.json; FileNotFoundError when it has none."""
    path = Path(folder) / FORMAT_FILE
    if not path.exists():
        raise FileNotFoundError(f"{folder}: not an entailment checkpoint (no {FORMAT_FILE})")
    return json.loads(path.read_text())


def load_scorer(folder: str | Path, batch_size: int | None = None) -> NeuralScorer:
    """Rebuild a scorer from a checkpoint folder (weights + tokenizer + entailment_format.json).
    A LoRA adapter folder (adapter_config.json) is loaded on top of its base model through PEFT."""
    from transformers import AutoTokenizer

    folder = checkpoint_folder(folder)
    fmt = load_format(folder)
    if fmt.get("family") == "stacked":
        return load_stacked(folder, fmt, batch_size)
    family = fmt.pop("family")
    fmt.pop("threshold", None)  # the CV-chosen threshold is read by the evaluation, not the scorer
    if batch_size is not None:
        fmt["batch_size"] = batch_size
    if (folder / "config.json").exists() and not (folder / "adapter_config.json").exists():
        fmt.pop("base_model", None)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    cls = model_class(family)
    if (folder / "adapter_config.json").exists():
        from peft import PeftModel

        base = cls.from_pretrained(fmt.pop("base_model"))
        model = PeftModel.from_pretrained(base, folder)
    elif not (folder / "config.json").exists() and fmt.get("base_model"):
        model = cls.from_pretrained(fmt.pop("base_model"))  # a zero-shot descriptor folder
    else:
        model = cls.from_pretrained(folder)
    return scorer_class(family)(model, tokenizer, **fmt)


def beside(folder: Path, name: str) -> str:
    """A model the checkpoint names: as given when it exists (or is a Hub id), else relative to the nearest
    folder above the checkpoint that holds it (a release names its models relative to the release folder,
    DIR/runs/parser/best from DIR/runs/entailment/stacked, so the checkpoint loads from any directory)."""
    path = Path(name)
    if path.is_absolute() or path.exists():
        return name
    for up in Path(folder).resolve().parents:
        if (up / path).exists():
            return str(up / path)
    return name  # a Hub id, or missing: the loader names it


def load_stacked(folder: Path, fmt: dict, batch_size: int | None = None) -> StackedScorer:
    neural = load_scorer(folder / fmt["neural"], batch_size) if fmt.get("neural") else None
    embedding = EmbeddingScorer() if fmt.get("embedding") else None
    structure = None
    if fmt.get("structure"):  # the parser and detector it was trained with (folders or Hub ids)
        name = fmt["structure"].get("embedder")
        shared = embedding if embedding is not None and name and \
            resolve_model_path(name) == resolve_model_path("minilm") else None  # one MiniLM in memory, not two
        structure = ReferenceStructure.from_pretrained(beside(folder, fmt["structure"]["parser"]),
                                                       beside(folder, fmt["structure"]["detector"]),
                                                       batch_size or 32, name, embedder_model=shared,
                                                       scope=fmt["structure"].get("scope", "all"))
    contradiction = None
    if fmt.get("contradiction"):  # the pair encoders and embedder it was trained with (folders or Hub ids)
        from models.entailment.contradiction_signal import ContradictionSignal

        c = fmt["contradiction"]
        same = structure.embedder if structure is not None and structure.embedder is not None and \
            structure.paths.get("embedder") == c["embedder"] else None  # one embedder in memory, not two
        contradiction = ContradictionSignal.from_pretrained([beside(folder, e) for e in c["encoders"]], c["embedder"],
                                                            c["k"], batch_size or 32,
                                                            embedder_model=same)
    return StackedScorer(fmt["features"], fmt["coef"], fmt["intercept"], fmt["mean"], fmt["std"],
                         neural=neural, embedding=embedding, threshold=fmt.get("threshold"), structure=structure,
                         contradiction=contradiction)
