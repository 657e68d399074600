"""Word -> verb-form tables from the raw lexical resources, for the predicate detector's
checkpoint (models.predicates.VerbForms wraps the dicts built here):
- CatVar (`catvar21.signed`): noun -> verb of the same derivational cluster;
- the Wiktionary inflection table (`en_verb_inflections.txt`): inflected form -> stem;
- QANom's heuristic `nominalization<TAB>verb` pairs;
- (predicate, verb_form) pairs of training records (QA-SRL Bank verbs, QANom nominal predicates).

Pure functions of files and records: no model, no config.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Iterable

from data_prep.records import read_jsonl

NOMINAL_SOURCES = ("qanom_train", "catvar", "nom_verb_pairs")  # the names `nominal_order` may use


def majority(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """word -> its most frequent form (both lower-cased; empty words or forms skipped)."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for word, form in pairs:
        if word and form:
            counts[word.lower()][form.lower()] += 1
    return {w: c.most_common(1)[0][0] for w, c in counts.items()}


def read_catvar(path: Path) -> tuple[dict[str, str], set[str]]:
    """(noun -> verb of the same CatVar cluster, all CatVar verbs). Lines are clusters
    `word_POS%signature#...`; with several verbs, the one sharing the longest prefix with the noun,
    then the one attested by more sources (bits of the signature)."""
    out: dict[str, str] = {}
    all_verbs: set[str] = set()
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        nouns, verbs = [], []
        for item in line.strip().split("#"):
            word_pos, _, sig = item.rpartition("%")
            word, _, pos = word_pos.rpartition("_")
            if not word:
                continue
            if pos == "N":
                nouns.append(word.lower())
            elif pos == "V":
                verbs.append((word.lower(), bin(int(sig)).count("1") if sig.isdigit() else 0))
        all_verbs.update(v for v, _ in verbs)
        if not verbs:
            continue
        for n in nouns:
            def rank(v):
                lcp = 0
                while lcp < min(len(n), len(v[0])) and n[lcp] == v[0][lcp]:
                    lcp += 1
                return lcp, v[1]
            out.setdefault(n, max(verbs, key=rank)[0])
    return out, all_verbs


def read_inflections(path: Path) -> dict[str, list[str]]:
    """Wiktionary table (stem, 3rd singular, -ing, past, past participle a line) -> every reading
    of a form: form -> [stems], in file order."""
    readings: dict[str, list[str]] = defaultdict(list)
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        forms = [f.lower() for f in line.split("\t")]
        if not forms or not forms[0]:
            continue
        for f in dict.fromkeys(forms):
            if f and forms[0] not in readings[f]:
                readings[f].append(forms[0])
    return readings


def read_nom_verb_pairs(path: Path) -> dict[str, str]:
    """QANom heuristic `nominalization<TAB>verb` lines; a noun listed twice keeps its first verb."""
    out: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0] and parts[1]:
            out.setdefault(parts[0].lower(), parts[1].lower())
    return out


def pick_stem(form: str, stems: list[str], verb_freq: Counter, known_verbs: set[str]) -> str:
    """The reading of an ambiguous form: the verb seen most in the training verbs (ran -> run, not
    'rin'; shot -> shoot), then one CatVar knows (judged -> judge, not the table's 'judg'), then the
    form's own stem reading (data_prep.verb_forms' rule: lay -> lay), then file order."""
    return max(stems, key=lambda st: (verb_freq[st], st in known_verbs, st == form, -stems.index(st)))


def build_tables(bank_pairs: list[tuple[str, str]], *, qanom_train_records: Path, catvar: Path, inflections: Path,
                 nom_verb_pairs: Path, nominal_order: Iterable[str] = NOMINAL_SOURCES):
    """(verbal, nominal, nominal_rank, stats).
    verbal: the QA-SRL Bank training verbs' release stems (`bank_pairs` = (predicate, verb_form)),
    then the Wiktionary inflection table (ambiguous forms: see pick_stem).
    nominal: first hit wins, in `nominal_order` (QANom training predicates' verb_form, CatVar, the
    heuristic noun->verb pairs); nominal_rank says which table a noun came from (0 = first)."""
    order = list(nominal_order)
    unknown = set(order) - set(NOMINAL_SOURCES)
    if unknown:
        raise ValueError(f"resources.nominal_order: unknown {sorted(unknown)}; expected names from {NOMINAL_SOURCES}")
    verbal = majority(bank_pairs)
    n_bank = len(verbal)
    verb_freq = Counter(f.lower() for _, f in bank_pairs if f)
    catvar_table, catvar_verbs = read_catvar(catvar)
    for form, stems in read_inflections(inflections).items():
        verbal.setdefault(form, pick_stem(form, stems, verb_freq, catvar_verbs))

    sources: dict[str, Callable[[], dict[str, str]]] = {
        "qanom_train": lambda: majority((x["predicate"], x["verb_form"]) for x in read_jsonl(qanom_train_records)
                                        if x.get("predicate_type") == "nominal"),
        "catvar": lambda: catvar_table,
        "nom_verb_pairs": lambda: read_nom_verb_pairs(nom_verb_pairs)}
    nominal: dict[str, str] = {}
    rank: dict[str, int] = {}
    stats = {"verbal": {"bank_train": n_bank, "wiktionary": len(verbal) - n_bank}, "nominal": {}}
    for r, name in enumerate(order):
        before = len(nominal)
        for noun, verb in sources[name]().items():
            if noun not in nominal:
                nominal[noun], rank[noun] = verb, r
        stats["nominal"][name] = len(nominal) - before
    return verbal, nominal, rank, stats
