"""A synthetic self-contradiction set from the QA-SRL / QANom TRAINING records.

    python -m data_prep.synthetic_contradiction [--processed-dir data/processed] [--seed 13]
        [--max-pairs N] [--out FILE]

writes `<processed_dir>/contradiction-synthetic.jsonl` in the ChatProtect pair format that
`data_prep.chatprotect.read_pairs` reads: {"id", "generator": "synthetic", "prompt" (the source
document id: the CV group), "prefix": "", "orig", "alt", "label", "kind"}, sentences as space-joined
tokens. From each training sentence, at most one pair of each label:

- label 1, `answer_replaced`: one QA's answer span replaced by the answer of a QA with the same
  role (and the same leading-preposition shape: "in 1948" <- "in 1950", not "in in 1950") from a
  sentence of another document of the same corpus (Wiki1k or TQA), sharing no content word with the original. Answers with a number
  are replaced first (by a numbered answer when one fits), then answers of the roles contradictions
  usually involve (when, where, how much / long, R0 / R1 / R2), then any role: so the set looks like
  ChatProtect's contradictions ("in 1948" / "in 1950", "46 judokas" / "47 judokas", another name).
- label 0, `argument_dropped` or `argument_added` (drawn): one argument's span removed (an adjunct:
  when / where / how / why / how much / how long, else an R2; never R0 / R1, whose removal leaves a
  broken sentence; a dangling article or preposition before the span goes with it), orig = the full sentence
  and alt = the shortened one, or the reverse. Saying less (or more) is not a contradiction: the
  pairs teach that a sentence pair differing by a whole argument agrees, one differing in an
  argument's value does not.

Degenerate cases are skipped and counted: a span that covers its predicate, a span or sentence too
long, an answer without a content word, a result with too few words, no replacement found. The set
is deterministic for a seed, shuffled by sentence with the Wikipedia / Wikinews sentences first
(the trainer reads the first `synthetic.limit` rows: the domain nearest ChatProtect's), label 1 and
label 0 rows alternating (every prefix is balanced), as many of each.

Only training records are read (`load_training_records` of data_prep.synthetic_entailment: files
`qanom.train.jsonl`, `qasrl-bank.train-offline.jsonl`, and only records whose split is a training
split), so no evaluation document can enter the set.
"""
from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter, defaultdict
from pathlib import Path

from data_prep.records import SkipCounter, document_id, write_jsonl
from data_prep.synthetic_entailment import add_input_options, read_inputs
from metrics.roles import qa_role

KINDS = ("answer_replaced", "argument_dropped", "argument_added")
ADJUNCTS = {"when", "where", "how", "why", "how much", "how long"}
# roles whose change usually makes a contradiction in ChatProtect (dates, places, amounts, who / what)
PREFERRED = {"when", "where", "how much", "how long", "R0", "R1", "R2"}
PREPOSITIONS = {"in", "on", "at", "during", "since", "from", "by", "for", "after", "before", "until", "to",
                "into", "with", "of", "through", "throughout", "around", "near", "within", "across"}
STOP = PREPOSITIONS | {"the", "a", "an", "and", "or", "but", "this", "that", "these", "those", "he", "she", "it",
                       "they", "we", "i", "you", "him", "her", "them", "us", "me", "his", "its", "their", "our",
                       "my", "your", "who", "which", "what", "is", "was", "are", "were", "be", "been", "as",
                       "than", "then", "there", "here", "some", "all", "also", "not", "no", "so", "very", "'s"}
AUXILIARIES = {"is", "was", "are", "were", "be", "been", "being", "has", "have", "had", "will", "would", "can",
               "could", "should", "may", "might", "must", "do", "does", "did"}
DETERMINERS = {"a", "an", "the"}
MAX_SPAN = 8        # answers longer than this are clauses, not values that a contradiction swaps
MAX_SENTENCE = 45   # ChatProtect sentences: 13-37 tokens (10th-99th percentile of validation)
MIN_WORDS = 3       # a shortened sentence needs at least this many words left
_WORD = re.compile(r"\w")


def role_key(role: str) -> str:
    """The role without its preposition for R2_<prep> / <wh>_<prep> ("R2_to" -> "R2", "where_from" -> "where")."""
    return role.split("_")[0]


def content(tokens) -> set[str]:
    return {t.lower() for t in tokens if _WORD.search(t) and t.lower() not in STOP}


def has_number(tokens) -> bool:
    return any(any(c.isdigit() for c in t) for t in tokens)


def _arguments(recs: list[dict], skipped: SkipCounter) -> list[dict]:
    """The usable arguments of one sentence: role, span (the QA's first non-empty answer), tokens."""
    out, seen = [], set()
    verbs = {r["predicate_index"] for r in recs if r.get("predicate_type") == "verbal"}
    for rec in recs:
        p, tokens = rec["predicate_index"], rec["tokens"]
        for qi, qa in enumerate(rec["qas"]):
            role = qa_role(qa)
            span = next((tuple(a) for a in qa["answers"] if a[1] > a[0]), None)
            where = f"{rec['sentence_id']}:{p}:{qi}"
            if role is None or span is None:
                skipped.skip("qa_without_role_or_answer", where)
            elif span[0] <= p < span[1]:
                skipped.skip("span_covers_predicate", where)  # a nominal predicate inside its own answer
            elif span[1] - span[0] > MAX_SPAN:
                skipped.skip("span_too_long", where)
            elif not content(tokens[span[0]:span[1]]):
                skipped.skip("answer_without_content_word", where)  # "him", "there": nothing to contradict
            elif (span, role) not in seen:
                seen.add((span, role))
                toks = tokens[span[0]:span[1]]
                out.append({"role": role, "span": span, "predicate": p, "qi": qi, "tokens": toks,
                            "clause": any(t.lower() in AUXILIARIES or span[0] + i in verbs for i, t in enumerate(toks))})
    return out


def _pool_key(sid: str, arg: dict) -> tuple:
    """Replacements come from the same corpus (a Wikinews name for a Wikinews name, not a textbook
    noun), the same role, and the same shape (with or without a leading preposition)."""
    return sid.split(":")[0], arg["role"], arg["tokens"][0].lower() in PREPOSITIONS


def _tier(arg: dict) -> int:
    """Which arguments to replace first: numbers, then the preferred roles, then the rest."""
    return 0 if has_number(arg["tokens"]) else 1 if role_key(arg["role"]) in PREFERRED else 2


def _replace(sid, tokens, args, pools, rng, skipped) -> dict | None:
    # a clause ("the seafloor was flat") swapped into or out of a sentence reads as garbage, not as
    # another value of the argument
    args = [a for a in args if not a["clause"]]
    if not args:
        skipped.skip("no_replaceable_argument", sid)
        return None
    best = min(_tier(a) for a in args)
    arg = rng.choice([a for a in args if _tier(a) == best])
    doc, own = document_id(sid), content(arg["tokens"])
    numbered, plain = pools[_pool_key(sid, arg)]
    # a number for a number where one exists ("in 1948" -> "in 1950"), else any answer of the role
    for pool in ([numbered, plain] if has_number(arg["tokens"]) else [plain, numbered]):
        for _ in range(30):  # a few draws: the pools are large, a clash (same document, shared word) is rare
            if not pool:
                break
            other_doc, new = rng.choice(pool)
            if other_doc != doc and not content(new) & own:
                s, e = arg["span"]
                new = fit_into(tokens, s, list(new))
                return {"id": f"synthetic:{sid}:{arg['predicate']}:{arg['qi']}:answer_replaced", "generator": "synthetic",
                        "prompt": doc, "prefix": "", "orig": " ".join(tokens),
                        "alt": " ".join(tokens[:s] + list(new) + tokens[e:]), "label": 1, "kind": "answer_replaced",
                        "role": arg["role"]}
    skipped.skip("no_replacement_found", sid)
    return None


def fit_into(tokens: list[str], start: int, new: list[str]) -> list[str]:
    """A replacement answer as it reads at `start` of the sentence: no second article ("a [the
    depression]"), a capital only at the sentence start (names keep theirs)."""
    if start > 0 and tokens[start - 1].lower() in DETERMINERS and len(new) > 1 and new[0].lower() in DETERMINERS:
        new = new[1:]
    if start == 0:
        new[0] = new[0][:1].upper() + new[0][1:]
    elif new[0].lower() in STOP:
        new[0] = new[0].lower()
    return new


def shorten(tokens: list[str], span: tuple[int, int], predicate: int) -> list[str]:
    """The sentence without the span (and a preposition left dangling before it, and the comma that
    set it off), re-capitalised when the span opened the sentence. The predicate always stays."""
    s, e = span
    # "moved to [Maine]" -> "moved", not "moved to"; "in the [north-west]" -> nothing left of it
    for words in (DETERMINERS, PREPOSITIONS):
        if s > 0 and s - 1 != predicate and tokens[s - 1].lower() in words and tokens[s].lower() not in PREPOSITIONS:
            s -= 1
    out = tokens[:s] + tokens[e:]
    if s == 0:
        while out and not _WORD.search(out[0]):
            out = out[1:]  # "[In 1959] , the family sold" -> "the family sold"
        if out and tokens[0][:1].isupper():
            out[0] = out[0][:1].upper() + out[0][1:]
    elif tokens[s - 1] == "," and (e == len(tokens) or tokens[e] in {",", ".", ";", ":"}):
        out = out[:s - 1] + out[s:]  # "left , [in 1959] ." -> "left ."
    return out


def _drop(sid, tokens, args, rng, skipped) -> dict | None:
    adjuncts = [a for a in args if role_key(a["role"]) in ADJUNCTS]
    cands = adjuncts or [a for a in args if role_key(a["role"]) == "R2"]
    if not cands:
        skipped.skip("no_droppable_argument", sid)
        return None
    arg = rng.choice(cands)
    p = arg["predicate"]
    short = shorten(tokens, arg["span"], p)
    if sum(bool(_WORD.search(t)) for t in short) < MIN_WORDS:
        skipped.skip("too_short_result", sid)
        return None
    kind = rng.choice(["argument_dropped", "argument_added"])
    full, cut = " ".join(tokens), " ".join(short)
    orig, alt = (full, cut) if kind == "argument_dropped" else (cut, full)
    return {"id": f"synthetic:{sid}:{p}:{arg['qi']}:{kind}", "generator": "synthetic", "prompt": document_id(sid),
            "prefix": "", "orig": orig, "alt": alt, "label": 0, "kind": kind, "role": arg["role"]}


def build(records: list[dict], seed: int = 13, max_pairs: int | None = None,
          skipped: SkipCounter | None = None) -> list[dict]:
    skipped = skipped if skipped is not None else SkipCounter()
    rng = random.Random(seed)
    by_sentence: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        by_sentence[rec["sentence_id"]].append(rec)
    sids = sorted(by_sentence)
    args = {}
    for sid in sids:
        if len(by_sentence[sid][0]["tokens"]) > MAX_SENTENCE:
            skipped.skip("sentence_too_long", sid)
            continue
        args[sid] = _arguments(by_sentence[sid], skipped)
    # replacement pools: (role, starts with a preposition) -> ([numbered answers], [other answers])
    pools: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for sid in sids:
        for a in args.get(sid, []):
            if a["clause"]:
                continue
            pools[_pool_key(sid, a)][0 if has_number(a["tokens"]) else 1].append((document_id(sid), tuple(a["tokens"])))
    # Wikipedia / Wikinews sentences first (ChatProtect's sentences are encyclopedic; TQA's are
    # textbook science), each part shuffled: the first `synthetic.limit` rows are then Wiki1k ones
    order = list(args)
    rng.shuffle(order)
    order.sort(key=lambda sid: not sid.startswith("Wiki"))
    pos, neg = [], []
    for sid in order:
        if max_pairs and min(len(pos), len(neg)) >= max_pairs // 2:
            break
        tokens = by_sentence[sid][0]["tokens"]
        if row := _replace(sid, tokens, args[sid], pools, rng, skipped):
            pos.append(row)
        if row := _drop(sid, tokens, args[sid], rng, skipped):
            neg.append(row)
    # label 1 and label 0 rows alternate, so that every prefix (the trainer reads the first
    # `synthetic.limit`) is balanced; the surplus of the larger label is dropped from the end
    keep = min(len(pos), len(neg), max_pairs // 2 if max_pairs else len(pos))
    for r in pos[keep:] + neg[keep:]:
        skipped.skip("trimmed_for_balance", r["id"])
    return [r for pair in zip(pos[:keep], neg[:keep]) for r in pair]


def changed(row: dict) -> list[str]:
    """The tokens of orig that alt does not share (the common prefix and suffix removed)."""
    a, b = row["orig"].split(), row["alt"].split()
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[-1 - j] == b[-1 - j]:
        j += 1
    return a[i:len(a) - j]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_input_options(ap)
    ap.add_argument("--max-pairs", type=int, default=None)
    args = ap.parse_args(argv)
    records, skipped = read_inputs(args)
    rows = build(records, args.seed, args.max_pairs, skipped)
    out = Path(args.out) if args.out else Path(args.processed_dir) / "contradiction-synthetic.jsonl"
    write_jsonl(out, rows)
    stats = {"rows": len(rows), "contradictions": sum(r["label"] for r in rows),
             "kinds": {k: sum(r["kind"] == k for r in rows) for k in KINDS},
             "roles": {label: dict(Counter(role_key(r["role"]) for r in rows if r["label"] == label).most_common())
                       for label in (1, 0)},
             "replaced_numbers": sum(r["label"] == 1 and has_number(changed(r)) for r in rows),
             "skipped": dict(skipped), "out": str(out)}
    print(json.dumps(stats, indent=1))
    return stats


if __name__ == "__main__":
    main()
