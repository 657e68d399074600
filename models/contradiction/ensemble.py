"""Several contradiction models of one recipe (its seeds) as one scorer: each member reads a pair with its
own pair encoder and its own stack, and the ensemble's P(contradiction) is their mean, decided at the
ensemble's own threshold (read off the members' averaged out-of-fold P by the recipe's rule:
train/contradiction/seed_ensemble.py). One seed's decision moves with where its CV put the threshold; the mean of several
does not move as much (docs/experiments/contradiction.md, "the seeds' ensemble").

A folder holds contradiction_ensemble.json and member0/, member1/, ... (each a ContradictionModel folder),
so it loads, hashes and publishes like one model. It stands in for a ContradictionModel wherever one is
scored (evaluation.contradiction, evaluation.self_contradiction): `encoder` gives each pair every
member's P, `probabilities` reads each member's own P into its own stack."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Sequence

import numpy as np

from models.checkpoint import checkpoint_folder
from models.contradiction.model import FORMAT_FILE, ContradictionModel, encoder_logit, scorable, score_basis

ENSEMBLE_FILE = "contradiction_ensemble.json"


class MemberEncoders:
    """The members' pair encoders as one: score() gives each pair the list of the members' P (None for a
    member without an encoder); add_encoder_scores keeps the list and their mean."""

    def __init__(self, encoders: Sequence):
        self.encoders = list(encoders)

    def score(self, pairs: Sequence[dict]) -> list[list[float | None]]:
        per = [enc.score(pairs) if enc is not None else [None] * len(pairs) for enc in self.encoders]
        return [list(ps) for ps in zip(*per)] if per else []


class ContradictionEnsemble:
    """The mean P of member ContradictionModels, decided at `threshold`. The pairs are parsed when the
    members' mean encoder P reaches the lowest member gate (`gate`); a parsed pair gives every member
    its alignment features, a pair under the gate gives none of them (their training means)."""

    def __init__(self, members: Sequence[ContradictionModel], threshold: float, info: dict | None = None):
        if not members:
            raise ValueError("a contradiction ensemble needs at least one member")
        self.members, self.threshold, self.info = list(members), float(threshold), dict(info or {})
        gates = [m.gate for m in self.members]
        # a member without a gate parses every pair, so the ensemble does too
        self.gate = None if any(g is None for g in gates) else float(min(gates))
        self.encoder = MemberEncoders([m.encoder for m in self.members]) if self.uses_encoder else None

    @property
    def uses_encoder(self) -> bool:
        return any(m.uses_encoder for m in self.members)

    @property
    def uses_alignment(self) -> bool:
        return any(m.uses_alignment for m in self.members)

    def scorable(self, row: dict) -> bool:
        return any(scorable(row, m.features) for m in self.members)

    def member_row(self, row: dict, k: int) -> dict:
        """The row as member k reads it: its own encoder P (and logit feature) in place of the mean."""
        ps = row.get("encoder_ps")
        if ps is None:
            return row
        features = dict(row.get("features", {}))
        if ps[k] is None:
            features.pop("encoder", None)
            return dict(row, features=features, encoder_p=None)
        features["encoder"] = encoder_logit(ps[k])
        return dict(row, features=features, encoder_p=float(ps[k]))

    def member_probabilities(self, rows: Sequence[dict]) -> list[list[float | None]]:
        """Each member's P of every row (member-major)."""
        return [m.probabilities([self.member_row(r, k) for r in rows]) for k, m in enumerate(self.members)]

    def probabilities(self, rows: Sequence[dict]) -> list[float | None]:
        """The members' mean P of each row; None when no member scores it."""
        out = []
        for ps in zip(*self.member_probabilities(rows)):
            kept = [p for p in ps if p is not None]
            out.append(float(np.mean(kept)) if kept else None)
        return out

    def basis(self, row: dict) -> str | None:
        return score_basis(self, row)

    @classmethod
    def load(cls, folder: str | Path, batch_size: int = 32) -> "ContradictionEnsemble":
        folder = checkpoint_folder(folder)
        spec = json.loads((folder / ENSEMBLE_FILE).read_text())
        missing = [m for m in spec["members"] if not (folder / m / FORMAT_FILE).exists()]
        if missing:
            raise FileNotFoundError(f"{folder / ENSEMBLE_FILE}: members {missing} have no {FORMAT_FILE} in {folder}")
        members = [ContradictionModel.load(folder / m, batch_size=batch_size) for m in spec["members"]]
        return cls(members, spec["threshold"], spec.get("info"))


def write_ensemble(folder: str | Path, member_folders: Sequence[str | Path], threshold: float,
                   info: dict | None = None) -> Path:
    """An ensemble folder from finished model folders: each copied in as memberK/ (hard links where the file
    system allows, so a release folder holds the weights once), and contradiction_ensemble.json."""
    folder = Path(folder)
    for src in member_folders:
        if not (Path(src) / FORMAT_FILE).exists():
            raise FileNotFoundError(f"{src}: not a contradiction checkpoint (no {FORMAT_FILE})")
    if folder.exists():
        shutil.rmtree(folder)  # written whole from its members, never patched
    names = []
    for k, src in enumerate(member_folders):
        names.append(f"member{k}")
        shutil.copytree(src, folder / names[-1], copy_function=_link_or_copy)
    (folder / ENSEMBLE_FILE).write_text(json.dumps({"members": names, "threshold": float(threshold),
                                                    "info": {**(info or {}), "sources": [str(s) for s in member_folders]}},
                                                   indent=1))
    return folder


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def load_contradiction_model(folder: str | Path, batch_size: int = 32):
    """A contradiction scorer folder: one model (contradiction.json) or an ensemble (contradiction_ensemble.json)."""
    resolved = checkpoint_folder(folder)
    if (resolved / ENSEMBLE_FILE).exists():
        return ContradictionEnsemble.load(resolved, batch_size=batch_size)
    return ContradictionModel.load(resolved, batch_size=batch_size)
