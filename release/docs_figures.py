"""The shipped figures in docs/, written from a release manifest, beside the README's table:
python -m release.docs_figures docs/results/release-full.json [--check]

Each page holds one block per family between `<!-- shipped figures: FAMILY ... -->` and
`<!-- end of shipped figures -->`; this module rewrites every block of every page, and the README's
results table through release.readme_table, so one command keeps README, docs/results.md and the family
pages on one manifest. --check exits 1 naming each block that differs (tests/test_docs_figures.py runs it)."""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from pathlib import Path

from release import readme_table
from release.readme_table import _pct, _r3, release_command

END = "<!-- end of shipped figures -->"
PAGES = {"parser": "docs/parser.md", "entailment": "docs/entailment.md", "contradiction": "docs/contradiction.md",
         "scoring": "docs/scoring.md", "results": "docs/results.md"}


def begin(family: str) -> str:
    return f"<!-- shipped figures: {family}, python -m release.docs_figures -->"


def stage_command(m: dict, name: str) -> str:
    """A stage's command as a reader runs it from the release folder (the manifest records it portable:
    release/manifest.py), without the options that only place the release's folders (paths.*, progress)."""
    return " ".join(tok for tok in shlex.split(m["stages"][name]["command"]) if not tok.startswith(("paths.", "progress=")))


def source(m: dict) -> str:
    commit = (m.get("git_commit") or "unknown")[:10]
    return (f"Release `{m['profile']}` of {m['date']} (commit `{commit}`): `{release_command(m)}`, manifest "
            f"`docs/results/release-{m['profile']}.json`; test sets, each read once.")


def parser_block(m: dict) -> list[str]:
    p = m["metrics"]["parser"]
    return [f"Span parser, `python -m train.parser {' '.join(_recipe(m, 'parser'))}` (stage `parser`), tested by "
            f"`{stage_command(m, 'eval_parser')}`:", "",
            "| test set | UA F1 | LA F1 | published UA F1: T5-small / T5-XL |", "|---|---|---|---|",
            f"| QA-SRL GS | {_pct(p['qasrl-gs']['ua_f1'])} | {_pct(p['qasrl-gs']['la_f1'])} | 68.6 / 75.9 |",
            f"| QANom | {_pct(p['qanom']['ua_f1'])} | {_pct(p['qanom']['la_f1'])} | 59.2 / 72.4 |"]


def entailment_block(m: dict) -> list[str]:
    e = m["metrics"]["entailment"]
    names = [("cliff", "CLIFF"), ("factscore", "FActScore"), ("verifiability", "Verifiability"), ("overall", "overall")]
    published = {"cliff": "75.7 / 70.4", "factscore": "82.4 / 78.0", "verifiability": "79.2 / 76.3", "overall": ""}
    return [f"QA-entailment classifier, `python -m train.entailment {' '.join(_recipe(m, 'entailment'))}` (stage "
            f"`entailment`), tested by `{stage_command(m, 'eval_entailment')}`; BAcc at threshold 0.5:", "",
            "| QASemConsistency test | BAcc | AUC | published BAcc: GPT-4o / MiniCheck-770M |", "|---|---|---|---|",
            *[f"| {label} | {_pct(e[k]['bacc'])} | {_pct(e[k]['auc'])} | {published[k]} |" for k, label in names]]


def contradiction_block(m: dict) -> list[str]:
    c = m["metrics"]["contradiction"]
    sd = c.get("seeds") or {}
    row = f"{_pct(c['precision'])} / {_pct(c['recall'])} / **{_pct(c['f1'])}** | {_pct(c.get('auc'))}"
    head = (f"Self-contradiction scorer, `python -m train.contradiction {' '.join(_recipe(m, 'contradiction'))}` "
            "(stage `contradiction`")
    if c.get("shipped") == "seed_ensemble":
        seeds = list(sd["seeds"])
        lines = [f"{head}, once per seed {', '.join(seeds)}; stage `contradiction_ensemble` joins them), tested by "
                 f"`{stage_command(m, 'eval_contradiction_ensemble')}`; ChatProtect test pairs ({c.get('n') or 0:,}), "
                 "contradiction class:", "",
                 "| scorer | threshold | P / R / **F1** | AUC |", "|---|---|---|---|",
                 f"| **the {sd['n']} seeds' ensemble (shipped)** | {c['threshold']:.3f} | {row} |"]
        lines += [f"| seed {s} alone | {v['threshold']:.3f} | {_pct(v['precision'])} / {_pct(v['recall'])} / "
                  f"{_pct(v['f1'])} | {_pct(v['auc'])} |" for s, v in sd["seeds"].items()]
        lines += [f"| one seed, mean ± sd | | {_pct(sd['precision_mean'])} / {_pct(sd['recall_mean'])} / "
                  f"{_pct(sd['f1_mean'])} ± {_pct(sd['f1_sd'])} | {_pct(sd['auc_mean'])} ± {_pct(sd['auc_sd'])} |",
                  "| ChatGPT, chain of thought (published) | | 84.2 / 83.2 / 83.7 | |", "",
                  f"Threshold rule {' / '.join(sd.get('threshold_rules') or [])}; {c.get('pairs_per_second', 0):.1f} "
                  "pairs/s in the release's test evaluation (one thread)."]
        return lines
    return [f"{head}), tested by `{stage_command(m, 'eval_contradiction')}`; ChatProtect test pairs, contradiction class:",
            "", "| scorer | P / R / **F1** | AUC |", "|---|---|---|", f"| the recipe (shipped) | {row} |",
            "| ChatGPT, chain of thought (published) | 84.2 / 83.2 / 83.7 | |"]


def scoring_block(m: dict) -> list[str]:
    x = m["metrics"]
    b, d, cop = x["consistency_benchmark"], x["decomp_score"], x["copula"]
    by = b.get("by_dataset") or {}
    per = " / ".join(_r3((by.get(k) or {}).get("pearson")) for k in ("cliff", "factscore", "verifiability"))
    return [f"The scoring pipeline on the release's parser, detector and classifier, "
            f"`{stage_command(m, 'eval_consistency_benchmark')}` (response level, test):", "",
            "| figure | this release |", "|---|---|",
            f"| Pearson / Spearman with the human score, our detector + parser's QAs | {_r3(b['pearson'])} / {_r3(b['spearman'])} |",
            f"| Pearson per dataset, CLIFF / FActScore / Verifiability | {per} |",
            f"| Pearson with the benchmark's own QAs | {_r3(b.get('benchmark_qas_pearson'))} |",
            f"| DecompScore, supported QAs per QA-SRL GS test sentence (unsupported share; `{stage_command(m, 'eval_decomp_score')}`) "
            f"| {_r3(d['decomp_score'])} ({_pct(d['unsupported_share'])} %) |",
            f"| copular facts, FActScore test copula predicates P / R (`{stage_command(m, 'eval_copula')}`) "
            f"| {_pct(cop['precision'])} / {_pct(cop['recall'])} |"]


def results_block(m: dict) -> list[str]:
    out = []
    for f in (parser_block, entailment_block, contradiction_block, scoring_block):
        out += [*f(m), ""]
    return out[:-1]


BLOCKS = {"parser": parser_block, "entailment": entailment_block, "contradiction": contradiction_block,
          "scoring": scoring_block, "results": results_block}


def _recipe(m: dict, stage: str) -> list[str]:
    """The recipe part of a training stage's command: its +experiment and overrides, not the release's wiring."""
    toks = stage_command(m, stage).split()[3:]
    return [t for t in toks if not t.startswith(("hydra.run.dir=", "parser=", "detector=", "entailment="))]


def block(family: str, m: dict) -> str:
    return "\n".join([begin(family), source(m), "", *BLOCKS[family](m), END])


def replace(text: str, family: str, new: str, where: str) -> str:
    pattern = re.compile(re.escape(begin(family)) + r".*?" + re.escape(END), re.S)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{where}: needs exactly one block {begin(family)} ... {END}")
    return pattern.sub(lambda _: new, text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m release.docs_figures")
    ap.add_argument("manifest", type=Path)
    ap.add_argument("--root", type=Path, default=Path("."), help="the repository (README.md, docs/)")
    ap.add_argument("--check", action="store_true", help="exit 1 when a block differs from the manifest's figures")
    a = ap.parse_args(argv)
    m = json.loads(a.manifest.read_text())
    stale = []
    for family, page in [("readme", "README.md"), *PAGES.items()]:
        path = a.root / page
        text = path.read_text()
        new = (readme_table.readme(text, m) if family == "readme"
               else replace(text, family, block(family, m), page))
        if new == text:
            continue
        if a.check:
            stale.append(f"{page} ({family})")
        else:
            path.write_text(new)
    if stale:
        print(f"not {a.manifest}'s figures: {', '.join(stale)}; run python -m release.docs_figures {a.manifest}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
