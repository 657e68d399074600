"""Each threshold rule's held-out F1 on the human-labelled selection pairs of a finished train.contradiction
run, from its out-of-fold scores (no model loads, the test pairs are not read):

    python -m train.contradiction.threshold_table R/validation_analysis.jsonl [--human chatgpt.validation] [--repeats 10]

R/validation_analysis.jsonl holds every selection pair's file, label and out-of-fold P (`p_oof`, null when the
chosen cell could not score it: never flagged). The rules and the held-out scoring are threshold.py's, so a
run's own cv_metrics.json (chosen.threshold_rule.by_rule) and this table agree; this reads any earlier run too."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from train.contradiction.threshold import RULES, choose_threshold


def read_analysis(path: Path) -> list[dict]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
            rows.append({"id": str(r["id"]), "file": str(r["file"]), "label": int(r["label"]), "p": r.get("p_oof"),
                         "group": f"{r['file']}|{str(r['id']).split('/')[1] if '/' in str(r['id']) else r['id']}"})
        except (ValueError, KeyError, TypeError) as e:
            raise SystemExit(f"{path}:{n}: not a validation_analysis row ({e})") from None
    return rows


def table(rows: list[dict], human_files: list[str], repeats: int, folds: int = 5, seed: int = 13) -> dict:
    p = np.array([r["p"] if r["p"] is not None else 0.0 for r in rows])
    scored = np.array([r["p"] is not None for r in rows])
    labels = np.array([r["label"] for r in rows])
    human = np.array([r["file"] in human_files for r in rows])
    if not human.any():
        raise SystemExit(f"no pair of the human-labelled files {human_files}; files here: "
                         f"{sorted({r['file'] for r in rows})}")
    return choose_threshold(list(RULES), p, labels, human, [r["group"] for r in rows], folds, repeats, seed, scored)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m train.contradiction.threshold_table")
    ap.add_argument("analysis", type=Path)
    ap.add_argument("--human", nargs="+", default=["chatgpt.validation"], help="the files (stems) with human labels")
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args(argv)
    out = table(read_analysis(a.analysis), a.human, a.repeats)
    print("| rule | threshold | held-out human F1 (mean ± sd over refolds) | SE over prompts | P / R |\n|---|---|---|---|---|")
    for r, v in out["by_rule"].items():
        if "f1_mean" in v:
            print(f"| `{r}` | {v['threshold']:.3f} | {100 * v['f1_mean']:.1f} ± {100 * v['f1_sd']:.1f} | "
                  f"{100 * v['f1_se_prompts']:.1f} | {100 * v['precision_mean']:.1f} / {100 * v['recall_mean']:.1f} |")
        else:
            print(f"| `{r}` | | {v['skipped']} | | |")
    print(f"\nbest held-out F1: `{out['rule']}`, threshold {out['threshold']:.3f}")


if __name__ == "__main__":
    main()
