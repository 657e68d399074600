"""The inputs of evaluation.self_contradiction, checked line by line before any model loads: topics (one a
line), prompts (one a line, or JSONL with "prompt"), texts (JSONL {"id", "prompt", "text"}) or ChatProtect
pairs taken as two-sentence texts. A bad line stops the read with its file and line; blank lines and
repeated prompts are skipped and counted."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from data_prep.records import DataFormatError

PROMPT = "Please tell me about {topic}"


def _lines(path: Path):
    if not path.exists():
        raise DataFormatError(f"{path}: file not found")
    return enumerate(path.read_text(encoding="utf-8").splitlines(), 1)


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:80] or "item"


def read_topics(path: Path) -> tuple[list[dict], Counter]:
    rows, skipped = [], Counter()
    for n, line in _lines(path):
        topic = line.strip()
        if not topic or topic.startswith("#"):
            skipped["blank_or_comment"] += 1
            continue
        rows.append({"id": f"{n:04d}_{slug(topic)}", "prompt": PROMPT.format(topic=topic)})
    return rows, skipped


def read_prompts(path: Path) -> tuple[list[dict], Counter]:
    """Plain text: one prompt a line. JSONL: the distinct "prompt" values in file order (a ChatProtect pair
    file gives its topics' prompts)."""
    rows, skipped, seen, problems = [], Counter(), set(), []
    for n, line in _lines(path):
        if not line.strip():
            skipped["blank"] += 1
            continue
        if path.suffix == ".jsonl":
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{path}:{n}: not valid JSON ({e.msg})")
                continue
            prompt = obj.get("prompt") if isinstance(obj, dict) else None
            if not isinstance(prompt, str) or not prompt.strip():
                problems.append(f"{path}:{n}: expected an object with a string 'prompt'")
                continue
        else:
            prompt = line
        prompt = prompt.strip()
        if prompt in seen:
            skipped["repeated_prompt"] += 1
            continue
        seen.add(prompt)
        rows.append({"id": f"{len(rows):04d}_{slug(prompt)}", "prompt": prompt})
    if problems:
        raise DataFormatError(f"{len(problems)} bad line(s) in {path}:\n  " + "\n  ".join(problems[:50]))
    return rows, skipped


def read_texts(path: Path) -> tuple[list[dict], Counter]:
    rows, skipped, problems, ids = [], Counter(), [], set()
    for n, line in _lines(path):
        if not line.strip():
            skipped["blank"] += 1
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(f"{path}:{n}: not valid JSON ({e.msg})")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            problems.append(f"{path}:{n}: expected an object with a string 'text' (and 'id', 'prompt')")
            continue
        if not isinstance(obj.get("prompt", ""), str):
            problems.append(f"{path}:{n}: 'prompt' must be a string")
            continue
        rid = str(obj.get("id", f"{path.stem}:{n}"))
        if rid in ids:
            problems.append(f"{path}:{n}: id {rid!r} repeats an earlier line's")
            continue
        ids.add(rid)
        rows.append({"id": rid, "prompt": obj.get("prompt") or "", "text": obj["text"]})
    if problems:
        raise DataFormatError(f"{len(problems)} bad line(s) in {path}; nothing was scored:\n  " + "\n  ".join(problems[:50]))
    return rows, skipped


def read_pair_texts(path: Path) -> tuple[list[dict], Counter]:
    """ChatProtect pairs (data_prep.chatprotect) as texts "orig alt", the pair's label kept beside."""
    from data_prep.chatprotect import read_pairs

    return [{"id": p["id"], "prompt": p["group"], "text": f"{p['a'].strip()} {p['b'].strip()}", "label": p["label"]}
            for p in read_pairs(path)], Counter()
