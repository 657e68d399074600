"""The contradiction family's pair encoder: any Hugging Face encoder fine-tuned as a cross-encoder
on (context, sentence a, sentence b) -> P(contradiction). It reads the whole pair, so it catches
conflicts no aligned QA shows (another successor, another claim) and scores a pair where a side
has no predicate. The QA alignment (models/contradiction/model.py) still says *which* fact conflicts.

Input: "<context> [SEP] <a>" as the first segment, <b> as the second. The context is what the
sentences' pronouns and definite descriptions ("the league") lean on; `context` chooses it:
`none`, `prompt` (the request both sentences answer, "Please tell me about X"), `prefix` (the last
`context_words` words written before the sentence) or `prompt_prefix` (both). The context is cut
first when a pair is longer than `max_length`, then the sentences.

Saved as a transformers sequence-classification folder + `pair_encoder.json`; loaded with
`PairEncoder.from_pretrained(folder or Hub id)`. A `PairEncoderEnsemble` (the fold encoders of
train.contradiction, `encoder.final=fold_ensemble`) is a folder of member folders whose
`pair_encoder.json` names them; it scores with the mean of its members' P, and the same
`from_pretrained` loads it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from models.progress import progress
from models.checkpoint import checkpoint_folder, read_json
from models.precision import usable_bf16

CONFIG_FILE = "pair_encoder.json"
CONTEXTS = ("none", "prompt", "prefix", "prompt_prefix")


def context_text(pair: dict, context: str, context_words: int) -> str:
    """The context string of a pair ({prompt or group, prefix, a, b}) for a `context` mode."""
    if context not in CONTEXTS:
        raise ValueError(f"context {context!r}: expected one of {CONTEXTS}")
    parts = []
    if context in ("prompt", "prompt_prefix"):
        parts.append(str(pair.get("prompt") or pair.get("group") or ""))
    if context in ("prefix", "prompt_prefix"):
        words = str(pair.get("prefix") or "").split()
        parts.append(" ".join(words[-context_words:]) if context_words else "")
    return " ".join(p for p in parts if p.strip())


class PairEncoder:
    def __init__(self, model, tokenizer, context: str = "prompt", context_words: int = 48, max_length: int = 192,
                 batch_size: int = 32, bf16: bool = False, info: dict | None = None, symmetric: bool = False,
                 calibration: dict | None = None):
        import torch

        self.torch, self.model, self.tokenizer = torch, model, tokenizer
        self.context, self.context_words, self.max_length = context, int(context_words), int(max_length)
        # bf16 autocast only where it is native (models/precision.py): emulated, it is many times slower
        self.batch_size, self.bf16, self.info = int(batch_size), usable_bf16(bf16, "pair encoder"), dict(info or {})
        # symmetric: P(contradiction) is the mean over both orders of the sentences (contradiction is
        # symmetric; the encoder, trained on both orders, still reads them differently); 2x the cost
        self.symmetric = bool(symmetric)
        # calibration: {slope, intercept} on logit(P) (Platt), fitted by train.contradiction on the pairs this
        # encoder scored out of fold; fold encoders trained on different prompts come out on different scales
        # (one's median P on validation's contradictions 0.14, the other's 0.96), so each is mapped to the
        # labels' scale before the ensemble averages them; None: the raw P
        self.calibration = dict(calibration) if calibration else None
        context_text({}, context, self.context_words)  # an unknown mode fails here, not mid-run

    # ------------------------------------------------------------------ inputs
    def segments(self, pair: dict) -> tuple[str, str]:
        """(first, second) segments: the context, cut from the left to fit beside both sentences
        (what was written right before the sentence matters most), then sentence a; sentence b."""
        a, b = str(pair.get("a") or ""), str(pair.get("b") or "")
        words = context_text(pair, self.context, self.context_words).split()
        if not words:
            return a, b
        budget = self.max_length - len(self._ids(a)) - len(self._ids(b)) - 5  # [CLS] [SEP] [SEP] [SEP] (+1 for MPNet's double sep)
        lengths = [len(self._ids(w)) for w in words]
        keep = len(words)
        while keep and sum(lengths[len(words) - keep:]) > budget:
            keep -= 1
        ctx = " ".join(words[len(words) - keep:])
        # a decoder's tokenizer (Gemma) has no separator token: a line break parts the context from sentence a
        sep = f" {self.tokenizer.sep_token} " if self.tokenizer.sep_token else "\n"
        return (f"{ctx}{sep}{a}" if ctx else a), b

    def encode(self, pairs: Sequence[dict]) -> list[dict]:
        """Token ids per pair, at most max_length (two over-long sentences are cut longest first)."""
        out = []
        for p in pairs:
            first, second = self.segments(p)
            enc = self.tokenizer(first, second, truncation="longest_first", max_length=self.max_length)
            out.append({k: list(v) for k, v in enc.items()})
        return out

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]

    # ------------------------------------------------------------------ scoring
    def score(self, pairs: Sequence[dict]) -> list[float]:
        """P(contradiction) per pair, in order (with `symmetric`, the mean over both orders)."""
        if not self.symmetric:
            return self.calibrated(self._score(pairs))
        both = self._score(list(pairs) + [dict(p, a=p.get("b"), b=p.get("a")) for p in pairs])
        return self.calibrated([(x + y) / 2 for x, y in zip(both[:len(pairs)], both[len(pairs):])])

    def calibrated(self, probs: Sequence[float]) -> list[float]:
        """P mapped through the encoder's Platt calibration (unchanged without one)."""
        if not self.calibration:
            return list(probs)
        return apply_platt(probs, self.calibration["slope"], self.calibration["intercept"])

    def _score(self, pairs: Sequence[dict]) -> list[float]:
        """P(contradiction) per pair, in order; batches of similar length (little padding)."""
        torch = self.torch
        feats = self.encode(pairs)
        order = sorted(range(len(feats)), key=lambda i: len(feats[i]["input_ids"]))
        probs = [0.0] * len(feats)
        self.model.eval()
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            for i in progress(range(0, len(order), self.batch_size), "pair encoder", unit="batch"):
                idx = order[i:i + self.batch_size]
                batch = self.tokenizer.pad([feats[j] for j in idx], return_tensors="pt")
                logits = self.model(**batch).logits.float()
                p = torch.softmax(logits, -1)[:, 1].tolist()
                for j, v in zip(idx, p):
                    probs[j] = float(v)
        return probs

    # ------------------------------------------------------------------ save / load
    def config(self) -> dict:
        return {"context": self.context, "context_words": self.context_words, "max_length": self.max_length,
                "symmetric": self.symmetric, "info": self.info,
                **({"calibration": self.calibration} if self.calibration else {})}

    def save_pretrained(self, folder: str | Path) -> Path:
        folder = Path(folder)
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        (folder / CONFIG_FILE).write_text(json.dumps(self.config(), indent=1))
        return folder

    @classmethod
    def from_pretrained(cls, path: str | Path, batch_size: int = 32, bf16: bool = False) -> "PairEncoder":
        """A saved encoder; its scoring settings (context, symmetric) come from pair_encoder.json."""
        from transformers import AutoModelForSequenceClassification, AutoTokenizer


        folder = checkpoint_folder(path)
        cfg = read_json(folder, CONFIG_FILE)
        if cfg is None:
            raise FileNotFoundError(f"{path}: not a pair encoder (no {CONFIG_FILE}); train one with "
                                    "python -m train.contradiction encoder.model=mpnet")
        if "members" in cfg:
            return PairEncoderEnsemble.from_pretrained(folder, batch_size=batch_size, bf16=bf16)
        model = AutoModelForSequenceClassification.from_pretrained(folder)
        return cls(model, AutoTokenizer.from_pretrained(folder), batch_size=batch_size, bf16=bf16, **cfg)


def _logit(p: Sequence[float]):
    import numpy as np

    q = np.clip(np.asarray(p, float), 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def apply_platt(probs: Sequence[float], slope: float, intercept: float) -> list[float]:
    import numpy as np

    return (1 / (1 + np.exp(-(slope * _logit(probs) + intercept)))).tolist()


def fit_platt(probs: Sequence[float], labels: Sequence[int]) -> dict:
    """{slope, intercept, pairs, positives}: a logistic fit of the labels on logit(P), nearly unregularised.
    Raises when the pairs hold one class or the fit does not increase with P (a calibration must keep the order)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels, int)
    if len(set(y.tolist())) < 2:
        raise ValueError(f"Platt calibration: the {len(y)} pairs hold one class only")
    fit = LogisticRegression(C=1e4, max_iter=1000).fit(_logit(probs)[:, None], y)
    slope, intercept = float(fit.coef_[0, 0]), float(fit.intercept_[0])
    if slope <= 0:
        raise ValueError(f"Platt calibration: slope {slope:.3f} on {len(y)} pairs: not increasing in P")
    return {"slope": slope, "intercept": intercept, "pairs": int(len(y)), "positives": int(y.sum())}


class PairEncoderEnsemble:
    """Pair encoders that score together: P(contradiction) is the mean of the members' P. The fold
    encoders of train.contradiction are such a set: each never saw a part of the training prompts, so
    the threshold chosen on their out-of-fold scores is set on models like the ones that score the
    test (a final encoder retrained on all the pairs is another model, with its own calibration).
    Costs one encoder pass per member."""

    def __init__(self, members: Sequence[PairEncoder], info: dict | None = None):
        if not members:
            raise ValueError("a pair-encoder ensemble needs at least one member")
        self.members, self.info = list(members), dict(info or {})

    @property
    def symmetric(self) -> bool:
        return self.members[0].symmetric

    @symmetric.setter
    def symmetric(self, value: bool) -> None:
        for m in self.members:
            m.symmetric = bool(value)

    def score(self, pairs: Sequence[dict]) -> list[float]:
        """The mean over the members of P(contradiction), per pair in order."""
        per_member = [m.score(pairs) for m in self.members]
        return [sum(ps) / len(ps) for ps in zip(*per_member)]

    def save_pretrained(self, folder: str | Path) -> Path:
        folder = Path(folder)
        names = [f"member{i}" for i in range(len(self.members))]
        for name, m in zip(names, self.members):
            m.save_pretrained(folder / name)
        (folder / CONFIG_FILE).write_text(json.dumps({"members": names, "info": self.info}, indent=1))
        return folder

    @classmethod
    def from_pretrained(cls, path: str | Path, batch_size: int = 32, bf16: bool = False) -> "PairEncoderEnsemble":
        folder = checkpoint_folder(path)
        saved = read_json(folder, CONFIG_FILE)
        missing = [m for m in saved["members"] if not (folder / m / CONFIG_FILE).exists()]
        if missing:
            raise FileNotFoundError(f"{folder}: the ensemble's members {missing} are missing (each a pair-encoder folder)")
        return cls([PairEncoder.from_pretrained(folder / m, batch_size=batch_size, bf16=bf16) for m in saved["members"]],
                   info=saved.get("info"))
