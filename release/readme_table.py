"""The README's results table and the release's time line, written from a release manifest:
python -m release.readme_table docs/results/release-full.json [--readme README.md] [--check]

Each sits between its markers below (the time line: release/timing.py); --check exits 1 when the README's
text is not the one the manifest gives (tests/test_readme.py runs it, so the front page never drifts from the
committed release)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from release.timing import time_line

PROFILES = Path(__file__).resolve().parent / "profiles"
BEGIN, END = "<!-- results table: python -m release.readme_table -->", "<!-- end of results table -->"
TIME_BEGIN, TIME_END = "<!-- release time: python -m release.readme_table -->", "<!-- end of release time -->"


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def _r3(v) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def contradiction_value(c: dict) -> str:
    """One model's figures; with several seeds, their ensemble's (shipped) and one seed's mean ± sd with its
    threshold rule (a release written before the ensemble: the mean ± sd and the seed it shipped)."""
    sd = c.get("seeds")
    one = f"{_pct(c['precision'])} / {_pct(c['recall'])} / {_pct(c['f1'])} ({_pct(c.get('auc'))})"
    if not sd:
        return one
    if c.get("shipped") == "seed_ensemble":
        return (f"{one}: the {sd['n']} seeds' mean P (shipped); one seed: {_pct(sd['precision_mean'])} / "
                f"{_pct(sd['recall_mean'])} / {_pct(sd['f1_mean'])} ± {_pct(sd['f1_sd'])} ({_pct(sd['auc_mean'])} ± "
                f"{_pct(sd['auc_sd'])}), mean ± sd, threshold rule {' / '.join(sd['threshold_rules'])}")
    return (f"{_pct(sd['precision_mean'])} / {_pct(sd['recall_mean'])} / {_pct(sd['f1_mean'])} ± {_pct(sd['f1_sd'])} "
            f"({_pct(sd['auc_mean'])} ± {_pct(sd['auc_sd'])}): mean ± sd of {sd['n']} seeds, threshold rule "
            f"{' / '.join(sd['threshold_rules'])}; shipped: seed {sd['shipped_seed']} (F1 {_pct(c['f1'])}), nearest the mean")


def profile_seeds(profile: str) -> list[int]:
    path = PROFILES / f"{profile}.yaml"
    return [int(s) for s in (yaml.safe_load(path.read_text()) or {}).get("extra_contradiction_seeds") or []] if path.exists() else []


def release_command(m: dict) -> str:
    """The command that rebuilds this manifest's set today: seeds beyond its profile's own are named on it."""
    seeds = list((m["metrics"]["contradiction"].get("seeds") or {}).get("seeds") or [])[1:]  # the recipe's own first
    extra = [s for s in seeds if int(s) not in profile_seeds(m["profile"])]
    return f"bash scripts/release.sh {m['profile']} DIR" + (f" --extra-seeds {' '.join(extra)}" if extra else "")


def readme(text: str, m: dict) -> str:
    """The README with the manifest's results table and release time line."""
    text = replace(text, table(m))
    return replace(text, "\n".join([TIME_BEGIN, time_line(m), TIME_END]), TIME_BEGIN, TIME_END)


def table(m: dict) -> str:
    x = m["metrics"]
    p, e, c, b, d, cop = (x["parser"], x["entailment"], x["contradiction"], x["consistency_benchmark"],
                          x["decomp_score"], x["copula"])
    commit = (m.get("git_commit") or "unknown")[:10]
    rows = [
        ("span parser", "QA-SRL GS / QANom test UA F1 (LA F1)",
         f"{_pct(p['qasrl-gs']['ua_f1'])} / {_pct(p['qanom']['ua_f1'])} ({_pct(p['qasrl-gs']['la_f1'])} / {_pct(p['qanom']['la_f1'])})",
         "T5-XL 75.9 / 72.4; T5-small 68.6 / 59.2"),
        ("QA-entailment classifier", "QASemConsistency test BAcc CLIFF / FActScore / Verifiability (AUC overall)",
         f"{_pct(e['cliff']['bacc'])} / {_pct(e['factscore']['bacc'])} / {_pct(e['verifiability']['bacc'])} ({_pct(e['overall']['auc'])})",
         "GPT-4o 75.7 / 82.4 / 79.2; MiniCheck-770M 70.4 / 78.0 / 76.3"),
        ("self-contradiction scorer", "ChatProtect test pairs P / R / F1 (AUC)", contradiction_value(c), "ChatGPT 84.2 / 83.2 / 83.7"),
        ("the scoring pipeline", "consistency benchmark test, response-level Pearson / Spearman with the human score",
         f"{_r3(b['pearson'])} / {_r3(b['spearman'])}", f"the benchmark's own QAs: {_r3(b.get('benchmark_qas_pearson'))}"),
        ("DecompScore", "supported QAs per QA-SRL GS test sentence (unsupported share)",
         f"{_r3(d['decomp_score'])} ({_pct(d['unsupported_share'])} %)", ""),
        ("copular facts", "FActScore test copula predicates P / R", f"{_pct(cop['precision'])} / {_pct(cop['recall'])}", ""),
    ]
    s = x.get("external", {}).get("summedits")
    if s:  # a development split: measured and chosen on, never trained on; the published figures are its test split's
        rows.append(("the scoring pipeline, outside its benchmark",
                     "SummEdits evaluation split (development), mean BAcc over 8 domains (AUC); word overlap beside it",
                     f"{_pct(s['mean_bacc'])} ({_pct(s['mean_auc'])}); word overlap {_pct(s['word_overlap']['mean_bacc'])}",
                     "test split: SummaC-Conv 57.1; QAFactEval 67.4; GPT-4 83.2"))
    # no wall time here: a release resumed after an interruption has no single one; the release section's time
    # line (release/timing.py) projects one from the stage times
    head = (f"Release `{m['profile']}` of {m['date']} (commit `{commit}`, {m['machine']}): `{release_command(m)}`; "
            f"its manifest: `docs/results/release-{m['profile']}.json`, its times: "
            "[release](docs/release.md).")
    lines = [BEGIN, head, "", "| model | test figure | this release | published |", "|---|---|---|---|"]
    lines += [f"| {a} | {b_} | {c_} | {d_} |" for a, b_, c_, d_ in rows]
    return "\n".join([*lines, END])


def replace(readme: str, new_table: str, begin: str = BEGIN, end: str = END) -> str:
    """The README with the text between `begin` and `end` (the markers included in `new_table`) replaced."""
    if begin not in readme or end not in readme:
        raise ValueError(f"the README has no markers {begin} ... {end}")
    before, rest = readme.split(begin, 1)
    return before + new_table + rest.split(end, 1)[1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m release.readme_table")
    ap.add_argument("manifest", type=Path)
    ap.add_argument("--readme", type=Path, default=Path("README.md"))
    ap.add_argument("--check", action="store_true", help="exit 1 when the README's table differs from the manifest's")
    a = ap.parse_args(argv)
    text = a.readme.read_text()
    new = readme(text, json.loads(a.manifest.read_text()))
    if a.check:
        if new != text:
            print(f"{a.readme}: the results table is not {a.manifest}'s; run python -m release.readme_table {a.manifest}",
                  file=sys.stderr)
            return 1
        return 0
    a.readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
