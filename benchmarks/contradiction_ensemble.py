"""The cost of scoring with the seeds' ensemble (models/contradiction/ensemble.py: every seed's pair encoders
and stack) against one seed's model, side by side: `evaluation.contradiction` on the same pairs, the order
rotating per repeat, each run loading its models afresh (loading is not timed: pairs/s is the CLI's own
`pairs_per_second`, the scoring from the first pair to the last, gate and parse included).

    python -m benchmarks.contradiction_ensemble --release DIR --single runs/contradiction/contradiction \
        --ensemble runs/contradiction_seeds/contradiction --threads 1 [--prompts 4]

The pairs are every pair of a seeded sample of prompts of chatgpt.big.jsonl (no test pair is read). Prints
and writes one JSON object: pairs/s per model (medians of the repeats) and `slowdown` (--single's pairs/s over --ensemble's).
Any two scorer folders compare the same way; `--names` says what they are in the result, e.g. one seed scored
in one order against the same seed in both orders:

    python -m benchmarks.contradiction_ensemble --release DIR --single ONE_ORDER/contradiction \
        --ensemble runs/contradiction/contradiction --names one_order both_orders --threads 1
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.common import ROOT, machine, median, write_result
from benchmarks.contradiction_analysis import sample_pairs


def score(release: Path, model: str, pairs_file: Path, out: Path, threads: int) -> float:
    """evaluation.contradiction's pairs/s for one model on the pairs (the release's parser, detector, entailment)."""
    import torch
    from hydra import compose, initialize_config_dir

    from evaluation.contradiction import run

    torch.set_num_threads(threads)
    overrides = [f"parser={release / 'runs/parser/best'}", f"detector={release / 'runs/detector/checkpoint'}",
                 f"entailment={release / 'runs/entailment/stacked'}", f"contradiction={release / model}",
                 f"pairs={pairs_file}", "html=false", "progress=false"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(config_name="eval_contradiction", overrides=overrides)
    return float(run(cfg, out)["pairs_per_second"])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", type=Path, required=True)
    ap.add_argument("--single", default="runs/contradiction/contradiction")
    ap.add_argument("--ensemble", default="runs/contradiction_seeds/contradiction")
    ap.add_argument("--pairs-file", default="../shared/data/chatprotect/chatgpt.big.jsonl")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--names", nargs=2, default=["single", "ensemble"], metavar=("BASELINE", "OTHER"),
                    help="the two models' names in the result (--single's, --ensemble's)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    release = a.release.resolve()
    pairs = sample_pairs(a.pairs_file, a.prompts, a.seed)
    base, other = a.names
    if base == other:
        ap.error(f"--names: two different names, not {base} twice")
    models = {base: a.single, other: a.ensemble}
    rates: dict[str, list[float]] = {m: [] for m in models}
    with tempfile.TemporaryDirectory() as tmp:
        pairs_file = Path(tmp) / "pairs.jsonl"
        pairs_file.write_text("".join(json.dumps({"id": p["id"], "prompt": p["group"], "prefix": p.get("prefix", ""),
                                                  "a": p["a"], "b": p["b"], "label": p["label"]}) + "\n" for p in pairs))
        for r in range(a.repeats):
            order = list(models) if r % 2 == 0 else list(models)[::-1]
            for name in order:
                rates[name].append(score(release, models[name], pairs_file, Path(tmp) / f"{name}{r}", a.threads))
    result = {"machine": machine(), "pairs": len(pairs), "prompts": a.prompts, "threads": a.threads, "models": models,
              "pairs_per_second": {m: median(v) for m, v in rates.items()}, "runs": rates,
              "slowdown": median(rates[base]) / median(rates[other])}
    print(json.dumps(result, indent=1))
    write_result("contradiction_ensemble", result, a.out)
    return result


if __name__ == "__main__":
    main()
