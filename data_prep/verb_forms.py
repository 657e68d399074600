"""Verb lemma of an inflected verb (`suspended` -> `suspend`) from the Wiktionary inflection
table of the QANom resources (stem, 3rd singular, -ing, past, past participle per line)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

INFLECTIONS_FILE = Path("qanom-resources/wiktionary/en_verb_inflections.txt")


@lru_cache(maxsize=4)
def _load(path: str) -> dict[str, str]:
    stems: dict[str, str] = {}
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    for line in lines:  # a word that is some verb's stem keeps that reading ("lay" -> lay, not lie)
        forms = line.split("\t")
        if forms and forms[0]:
            stems.setdefault(forms[0].lower(), forms[0].lower())
    for line in lines:
        forms = line.split("\t")
        for form in forms[1:]:
            stems.setdefault(form.lower(), forms[0].lower())
    return stems


def verb_stem(word: str, data_dir: str | Path | None) -> str:
    """The lemma, or the lower-cased word itself when the table is missing or lacks it."""
    if data_dir is not None:
        path = Path(data_dir) / INFLECTIONS_FILE
        if path.exists():
            return _load(str(path)).get(word.lower(), word.lower())
    return word.lower()


def inflection_rows(data_dir: str | Path) -> list[list[str]]:
    """The Wiktionary table's rows [stem, 3rd singular, -ing, past, past participle] under
    `data_dir`; a missing table is an error that names it."""
    path = Path(data_dir) / INFLECTIONS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path}: the Wiktionary verb inflection table is missing (set paths.data_dir)")
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
