"""The self-contradiction scorer's analysis of ChatProtect pairs (models/contradiction/model.py,
analyse_pairs: both sentences' QAs, then every QA scored by the entailment classifier against the
response's earlier sentences and the other sentence) with each sentence parsed once across premises
(`ReferenceStructure.remember_sentences`, the default) against each premise parsed on its own, side by
side in one process on the same pairs, the order rotating per repeat, every run from a cold cache.

    python -m benchmarks.contradiction_analysis --parser P --detector DET --entailment E --threads 1 [--prompts 6]

The pairs are every pair of a seeded sample of prompts of chatgpt.big.jsonl (a prompt's pairs share
their earlier sentences, as in the release's selection file). Prints and writes one JSON object:
pairs/s per mode (medians), `speedup`, `same_rows` (statuses equal) and `max_feature_diff` (the
largest |difference| of any pair feature between the modes). Release: `train.contradiction` analyses
4,633 + 549 selection pairs this way.
"""
from __future__ import annotations

import argparse
import json
import random
import time

from benchmarks.common import machine, median, write_result

MODES = {"per_premise": False, "per_sentence": True}


def sample_pairs(path: str, prompts: int, seed: int) -> list[dict]:
    from data_prep.chatprotect import read_pairs

    pairs = read_pairs(path)
    chosen = set(random.Random(seed).sample(sorted({p["group"] for p in pairs}), prompts))
    return [p for p in pairs if p["group"] in chosen]


def feature_diff(a: list[dict], b: list[dict]) -> float:
    return max((abs(x["features"][k] - y["features"][k]) for x, y in zip(a, b)
                for k in x.get("features", {}) if k in y.get("features", {})), default=0.0)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parser", required=True)
    ap.add_argument("--detector", required=True)
    ap.add_argument("--entailment", required=True)
    ap.add_argument("--pairs-file", default="../shared/data/chatprotect/chatgpt.big.jsonl")
    ap.add_argument("--prompts", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import torch

    from models.contradiction import analyse_pairs, load_components

    torch.set_num_threads(a.threads)
    pairs = sample_pairs(a.pairs_file, a.prompts, a.seed)
    components = load_components(a.parser, a.detector, a.entailment)
    structure = getattr(components[2], "structure", None)
    if structure is None:
        raise SystemExit(f"{a.entailment}: a classifier that parses its premise (classifier=stacked with a parser) "
                         "is what this measures")
    times: dict[str, list[float]] = {m: [] for m in MODES}
    rows: dict[str, list[dict]] = {}
    names = list(MODES)
    for r in range(a.repeats):
        for mode in names[r % 2:] + names[:r % 2]:
            structure.forget()
            structure.remember_sentences = MODES[mode]
            start = time.perf_counter()
            rows[mode] = analyse_pairs(pairs, *components)
            times[mode].append(time.perf_counter() - start)
    result = {"benchmark": "contradiction_analysis", "machine": machine(), "pairs": len(pairs), "prompts": a.prompts,
              "repeats": a.repeats, "threads": a.threads, "checkpoints": [a.parser, a.detector, a.entailment],
              **{m: {"seconds": median(t), "pairs_per_s": len(pairs) / median(t), "runs": t} for m, t in times.items()},
              "speedup": median(times["per_premise"]) / median(times["per_sentence"]),
              "same_rows": [x["status"] for x in rows["per_premise"]] == [x["status"] for x in rows["per_sentence"]],
              "max_feature_diff": feature_diff(rows["per_premise"], rows["per_sentence"])}
    path = write_result("contradiction_analysis", result, a.out)
    print(json.dumps({k: v for k, v in result.items() if k != "machine"}, indent=1))
    print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
