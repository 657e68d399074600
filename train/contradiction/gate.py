"""The alignment gate of a stacked contradiction model (encoder + QA alignment): a pair whose encoder
P(contradiction) is under the gate is not parsed, its alignment features count as their training
means (models.contradiction.gated). Parsing is most of the scoring time and the encoder puts most
pairs near 0, so a gate that loses no CV F1 makes scoring several times faster.

The gate is chosen by the same grouped CV as the rest of the model: for each candidate, the
out-of-fold probabilities with the gated pairs imputed, at the chosen threshold; the largest
candidate (fewest pairs parsed) whose pooled F1 stays within `gate.max_f1_loss` of the ungated model's."""
from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger(__name__)


def choose_gate(cfg, rows, features, base_oof, oof_at, threshold: float, score) -> dict:
    """{chosen, ungated, candidates: [{gate, parsed, f1, precision, recall}]}, the candidates the encoder P
    quantiles that leave `gate.parsed` shares of the selection pairs parsed; chosen None when no
    candidate keeps the F1 (or the model lacks the encoder or the alignment). `base_oof`: the chosen
    cell's out-of-fold probabilities (every pair parsed); `oof_at(gate)`: the same folds with the pairs
    under `gate` unparsed; `score(oof, t)` -> P/R/F1 of the selection pairs, as the grid counts them."""
    spec = cfg.gate
    shares = sorted((float(x) for x in spec.parsed or []), reverse=True)
    if "encoder" not in features or len(features) == 1 or not shares:
        return {"chosen": None, "candidates": []}
    base = score(base_oof, threshold)
    enc = np.array([r["encoder_p"] for r in rows])
    # each model's encoder has its own scale: a candidate is the encoder P above which that share lies
    candidates = list(dict.fromkeys(float(np.quantile(enc, 1 - x)) for x in shares))
    out, chosen = [], None
    for g in candidates:
        cv = score(oof_at(g), threshold)
        out.append({"gate": g, "parsed": float((enc >= g).mean()), **cv})
        log.info("gate %.3f: %.1f%% of the selection pairs parsed, CV F1 %.3f (ungated %.3f)",
                 g, 100 * out[-1]["parsed"], cv["f1"], base["f1"])
        if cv["f1"] >= base["f1"] - float(spec.max_f1_loss):
            chosen = g
    return {"chosen": chosen, "ungated": base, "candidates": out}
