"""ChatProtect self-contradiction pairs (JSONL, one pair a line; ../shared/data/chatprotect/README):
{id, prompt, prefix, orig, alt, label?, generator?, kind?} -> {id, group, prefix, a, b, label, generator, kind?} (kind: a synthetic pair's).

Every line is checked before any model loads: a line that is not JSON, or not an object with
string `orig` and `alt` (or `a` and `b`), or a label other than 0 / 1, stops the read with the file
and line. Empty sentences are kept: the scorer gives them a status, not a score.

release_jsonl makes those JSONL files from the release (eth-sri/ChatProtect; python -m data_prep.download
calls it on the files of its GitHub archive): one pair file of the release becomes one line, the same bytes
as ../shared/data/chatprotect (its README names the rules).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Mapping

from data_prep.records import DataFormatError, text_lines

# the paper's pairs: sentences written in generation mode 3 (a continuation of the prefix that states a
# triple), the triple extracted by CompactIE, and a tag (`ok`; `strong`: the two sentences contradict)
PAIR_FOLDER = "m3"
EXTRACTOR = "compactie"
TAGS = {"ok": 0, "strong": 1}
# how the release's annotation tool joins the two sentences of a pair in its `text`
ANNOTATION_SEPARATOR = "\n---;;;\n"


def read_pairs(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        raise DataFormatError(f"{path}: pairs file not found")
    pairs, problems = [], []
    for lineno, line in text_lines(path):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"{where}: not valid JSON ({e.msg})")
            continue
        a = row.get("orig", row.get("a")) if isinstance(row, dict) else None
        b = row.get("alt", row.get("b")) if isinstance(row, dict) else None
        if not isinstance(a, str) or not isinstance(b, str):
            problems.append(f"{where}: expected an object with string 'orig' and 'alt' (or 'a' and 'b')")
            continue
        label = row.get("label")
        if label not in (None, 0, 1) or isinstance(label, bool):
            problems.append(f"{where}: label must be 0 or 1, not {label!r}")
            continue
        prefix = row.get("prefix") or ""
        if not isinstance(prefix, str):
            problems.append(f"{where}: prefix must be a string")
            continue
        pairs.append({"id": str(row.get("id", f"{path.stem}:{lineno}")), "group": str(row.get("prompt", "")),
                      "prefix": prefix, "a": a, "b": b, "label": label, "generator": row.get("generator"),
                      **({"kind": row["kind"]} if "kind" in row else {})})  # the synthetic set's pair kind
    if problems:
        raise DataFormatError(f"{len(problems)} bad line(s) in {path}; nothing was scored:\n  " + "\n  ".join(problems[:50]))
    return pairs


def _json(files: Mapping[str, bytes], path: str):
    if path not in files:
        raise DataFormatError(f"{path}: not in the release")
    try:
        return json.loads(files[path])
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataFormatError(f"{path}: not valid JSON ({e})") from None


def _pair(path: str, file: dict, keys: tuple[str, ...]) -> list:
    missing = [k for k in keys if k not in file]
    if missing:
        raise DataFormatError(f"{path}: no {', '.join(missing)} in the pair file")
    return [file[k] for k in keys]


def sentence_pairs(files: Mapping[str, bytes], folder: str, names: str, label_source: str | None = None) -> list[dict]:
    """The scored pairs of one generator's folder (test/<set>/sentences/<generator>), sorted by id: every
    <prompt>/m3/<name>.txt whose name matches `names` (a regex), triple by CompactIE, tag ok / strong."""
    generator = folder.rstrip("/").rsplit("/", 1)[-1]
    name = re.compile(names)
    rows, seen = [], False
    for path in files:
        parts = path.removeprefix(folder + "/").split("/")  # <prompt>/<mode>/<name>.txt
        if not path.startswith(folder + "/") or len(parts) != 3 or parts[1] != PAIR_FOLDER:
            continue
        seen = True
        stem = parts[2].removesuffix(".txt")
        if not parts[2].endswith(".txt") or not name.fullmatch(stem):
            continue  # the cost logs (_cost_*), and the files `names` leaves out
        file = _json(files, path)
        triple = file.get("triple")
        if not triple or triple[1] != EXTRACTOR or file.get("tag") not in TAGS:
            continue
        target, prefix, orig, alt, tag = _pair(path, file, ("target", "prefix", "orig", "alt", "tag"))
        rows.append({"id": f"{generator}/{parts[0]}/{stem}", "generator": generator, "prompt": target,
                     "prefix": prefix, "orig": orig.strip(), "alt": alt.strip(), "triple": triple[0],
                     "label": TAGS[tag], **({"label_source": label_source} if label_source else {})})
    if not seen:
        raise DataFormatError(f"{folder}/*/{PAIR_FOLDER}/: no pair files in the release")
    return sorted(rows, key=lambda r: r["id"])


def annotated_pairs(files: Mapping[str, bytes], folder: str, annotations: list[str]) -> list[dict]:
    """The pairs people judged, in the order of the annotation files (folder/<file>, each a JSON list of
    {fn, text, target, prefix, label}; `demo` items skipped): label 1 where they kept the `strong` tag. The
    pair's sentence file (fn) gives its prefix and triple; where it is missing, the annotation's text."""
    rows = []
    for annotation in annotations:
        path = f"{folder}/{annotation}"
        for item in _json(files, path):
            fn = item.get("fn")
            if fn == "demo":
                continue  # the annotators' warm-up examples
            parts = str(fn).split("/")
            sentences = str(item.get("text", "")).split(ANNOTATION_SEPARATOR)
            if len(parts) != 7 or len(sentences) != 2:
                raise DataFormatError(f"{path}: item {item.get('id')}: expected fn test/<set>/sentences/<generator>/"
                                      f"<prompt>/<mode>/<name>.txt and two sentences in text, got {fn!r}")
            file = _json(files, fn) if fn in files else {}
            triple = file.get("triple")
            generator = parts[3]
            rows.append({"id": f"{generator}/{parts[1]}/{parts[4]}/{parts[6].removesuffix('.txt')}",
                         "generator": generator, "prompt": item["target"], "prefix": file.get("prefix", item["prefix"]),
                         "orig": sentences[0].strip(), "alt": sentences[1].strip(),
                         "triple": triple[0] if triple else None, "label": int("strong" in item["label"]),
                         "label_source": "human"})
    return rows


def release_folders(src: str, pairs: str, sentences: list[str] = (), **options) -> list[str]:
    """The release folders (and files) release_jsonl reads for one output."""
    return [src, *sentences]


def release_jsonl(files: Mapping[str, bytes], src: str, pairs: str, sentences: list[str] = (), **options) -> bytes:
    """One output file of conf/download.yaml's chatprotect release, made from `files` ({release path: bytes}):
    pairs=sentences (sentence_pairs of the folder src) or pairs=annotations (annotated_pairs below src)."""
    if pairs == "sentences":
        rows = sentence_pairs(files, src, **options)
    elif pairs == "annotations":
        rows = annotated_pairs(files, src, **options)
    else:
        raise ValueError(f"pairs={pairs!r}: expected sentences or annotations")
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
