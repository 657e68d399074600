"""The verb forms a realised question needs (spend -> spent, bear -> bore / borne), without the data
directory: the Wiktionary inflection table of the QANom resources
(`qanom-resources/wiktionary/en_verb_inflections.txt`, 21,970 verbs) reduced to the 2,893 rows that the
regular English rules (models/parser/question_templates.py) would get wrong, committed beside this module
as `verb_inflections.tsv` (stem, 3rd singular, -ing, past, past participle; lower-cased). A parser
checkpoint trained before this table existed still realises "spent": the table ships with the code, not
with the checkpoint.

Rebuild it from a data directory (it changes only when the resource does):

    python -m models.parser.verb_inflections ../shared/data

CORRECTIONS mends rows the table gets wrong for QA-SRL's use, before anything else: the table (and so the
QA-SRL Bank's own questions, "What is bornt?") reads "born" as a verb of its own, `born bornt bornt`.
"""
from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

TABLE = Path(__file__).with_name("verb_inflections.tsv")
CLASSES = ("STEM", "S3", "ING", "PAST", "PASTPART")  # the column order of the table
_VOWELS = set("aeiou")

# lemma -> forms in CLASSES order; these win over the table and over a checkpoint's seen forms
CORRECTIONS = {
    "born": ("bear", "bears", "bearing", "bore", "born"),  # "When was someone born?"; never "bornt"
    "be": ("be", "is", "being", "was", "been"),
}


def regular_form(lemma: str, cls: str) -> str:
    """The regular English rules: what an unknown verb gets."""
    if cls == "STEM":
        return lemma
    if cls == "S3":
        if lemma.endswith(("s", "x", "z", "ch", "sh", "o")):
            return lemma + "es"
        if lemma.endswith("y") and len(lemma) > 1 and lemma[-2] not in _VOWELS:
            return lemma[:-1] + "ies"
        return lemma + "s"
    if cls == "ING":
        if lemma.endswith("ie"):
            return lemma[:-2] + "ying"
        if lemma.endswith("e") and not lemma.endswith(("ee", "ye", "oe")) and len(lemma) > 2:
            return lemma[:-1] + "ing"
        return lemma + "ing"
    # PAST and PASTPART
    if lemma.endswith("e"):
        return lemma + "d"
    if lemma.endswith("y") and len(lemma) > 1 and lemma[-2] not in _VOWELS:
        return lemma[:-1] + "ied"
    return lemma + "ed"


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, str]]:
    """lemma -> {class: word} for the irregular rows (the committed table)."""
    if not TABLE.exists():
        raise FileNotFoundError(f"{TABLE}: the committed verb inflection table is missing; rebuild it with "
                                "python -m models.parser.verb_inflections DATA_DIR")
    out: dict[str, dict[str, str]] = {}
    for n, line in enumerate(TABLE.read_text(encoding="utf-8").splitlines(), 1):
        forms = line.split("\t")
        if len(forms) != len(CLASSES):
            raise ValueError(f"{TABLE}:{n}: expected {len(CLASSES)} tab-separated forms, got {len(forms)}")
        out.setdefault(forms[0], dict(zip(CLASSES, forms)))
    return out


def correction(lemma: str, cls: str) -> str | None:
    forms = CORRECTIONS.get(lemma)
    return forms[CLASSES.index(cls)] if forms else None


def known_form(lemma: str, cls: str) -> str | None:
    """The Wiktionary form of `lemma` in class `cls` when the regular rules would get it wrong, else None."""
    return table().get(lemma, {}).get(cls)


def irregular_rows(rows: list[list[str]], regular) -> list[list[str]]:
    """The Wiktionary rows (stem, s3, ing, past, pastpart) that `regular(lemma, cls)` gets wrong,
    lower-cased; of two rows with one lower-cased stem ("AND" / "and"), the lower-case one."""
    best: dict[str, tuple[bool, list[str]]] = {}
    for row in rows:
        if len(row) != len(CLASSES) or not row[0]:
            continue
        forms = [f.strip().lower() for f in row]
        lower = row[0] == row[0].lower()
        if forms[0] not in best or (lower and not best[forms[0]][0]):
            best[forms[0]] = (lower, forms)
    return [forms for _, forms in best.values()
            if any(regular(forms[0], cls) != f for cls, f in zip(CLASSES, forms))]


def write_table(data_dir: str | Path, path: Path = TABLE) -> int:
    """Rebuild the committed table from the resource under `data_dir`; returns the number of rows."""
    from data_prep.verb_forms import inflection_rows

    rows = irregular_rows(inflection_rows(data_dir), regular_form)
    path.write_text("".join("\t".join(r) + "\n" for r in sorted(rows)), encoding="utf-8")
    table.cache_clear()
    return len(rows)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m models.parser.verb_inflections DATA_DIR")
    print(f"{write_table(sys.argv[1])} rows -> {TABLE}")
