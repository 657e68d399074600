"""The selection pairs of train.contradiction with their analysed rows, and the three questions the CV
asks of them: which rows a feature set can score, and the P/R/F1 of a decision over every pair or per file."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from metrics.contradiction import binary_prf
from models.contradiction import scorable


class SelectionPairs:
    def __init__(self, pairs: list[dict], rows: list[dict]):
        self.pairs, self.rows = pairs, rows
        self.labels = np.array([p["label"] for p in pairs])
        # a prompt's pairs stay in one fold; the file keeps two files' prompt ids apart
        self.groups = [f"{p['file']}|{p['group']}" for p in pairs]

    def usable(self, features) -> list[int]:
        return [i for i, r in enumerate(self.rows) if scorable(r, features)]

    def on_all(self, idx, probs, t: float, files=None) -> dict:
        """P/R/F1 over every pair (of `files`): a pair without a score counts as 'no contradiction' found,
        so a feature set that scores fewer pairs is not flattered."""
        decision = np.zeros(len(self.pairs), bool)
        decision[idx] = np.asarray(probs) >= t
        keep = [i for i, p in enumerate(self.pairs) if files is None or p["file"] in files]
        return binary_prf(self.labels[keep], decision[keep])

    def by_file(self, idx, probs, t) -> dict:
        return {Path(f).stem: self.on_all(idx, probs, t, {f}) for f in dict.fromkeys(p["file"] for p in self.pairs)}
