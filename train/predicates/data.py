"""The predicate detector's data: labelled sentences from the processed records, the leakage
checks, the verb-form tables of the checkpoint, and the training windows.

Each source labels one predicate type only, so a word's label is a pair [verbal, nominal] of
1 / 0 / IGNORE (unknown):
- QA-SRL Bank offline set (`qasrl-bank.train-offline.jsonl`): every verb of a sentence is a
  record (also those with no QA), so a sentence's predicate_index values are its verbs: verbal = 1
  there, 0 elsewhere; nominal unknown.
- QANom predicate-detector sentences (`qanom-predicates.<split>.jsonl`): True = nominal predicate
  (1), False / O = not (0); verbal unknown.
Identical sentences from both sources are merged (both labels known).

Leakage: the Bank offline set must hold no GS / QANom evaluation document (checked, raises), and no
training sentence may equal a dev / test sentence. The published QANom train split repeats 6
dev / test sentences word for word (and the Bank offline set 1, from another document): those are
dropped, counted, and the result is asserted before training.
"""
from __future__ import annotations

import random
from collections import Counter, defaultdict
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from data_prep.leakage import check_no_leakage, evaluation_documents
from data_prep.records import read_jsonl
from data_prep.verb_form_tables import build_tables
from models.predicates import VerbForms, encode_windows, word_pieces

IGNORE = -100  # an unknown label (the other source's type, padding, [CLS] / [SEP], non-first sub-tokens)

DATA_KEYS = ("bank_train", "qanom_train", "gs_dev", "qanom_dev", "gs_test", "qanom_test")
FORM_KEYS = ("verbal_forms_dev", "verbal_forms_test", "nominal_forms_dev", "nominal_forms_test")  # optional
RESOURCE_KEYS = ("qanom_train_records", "nom_verb_pairs", "catvar", "inflections")


def _path(p) -> Path:
    return Path(hydra.utils.to_absolute_path(str(p)))


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{what}: {path} not found (build the records with `python -m data_prep.build "
                                "paths.data_dir=../shared/data`, or set paths.data_dir / QASEM_DATA_DIR)")
    return path


def check_inputs(cfg: DictConfig) -> None:
    """Fail before reading or training anything: every input file named, the detector known, a Hub
    repo named when pushing."""
    for k in DATA_KEYS:
        _require(_path(cfg.data[k]), f"data.{k}")
    for k in FORM_KEYS:
        if cfg.data[k]:
            _require(_path(cfg.data[k]), f"data.{k}")
    for k in RESOURCE_KEYS:
        _require(_path(cfg.resources[k]), f"resources.{k}")
    c = cfg.detector_model
    if not c.random_config and not c.model_name_or_path:
        raise ValueError("detector needs model_name_or_path ('minilm', a folder, a Hub id) or random_config")
    if int(c.max_length) < 3:
        raise ValueError(f"detector.max_length={c.max_length}: a window needs [CLS], a word and [SEP]")
    hub = cfg.hub
    if hub.push and (OmegaConf.is_missing(hub, "repo_id") or not hub.repo_id):
        raise ValueError("hub=push needs hub.repo_id=ORG/NAME")


# ---------------------------------------------------------------------------- sentences
def verb_sentences(records, source: str) -> list[dict]:
    """QA-SRL records (one per verb) -> sentences with verbal labels: 1 at every verb, 0 elsewhere."""
    by_id: dict[str, dict] = {}
    for r in records:
        s = by_id.setdefault(r["sentence_id"], {"id": r["sentence_id"], "tokens": r["tokens"], "verbs": set()})
        s["verbs"].add(int(r["predicate_index"]))
    return [{"id": s["id"], "tokens": s["tokens"], "source": source,
             "labels": [[int(i in s["verbs"]), IGNORE] for i in range(len(s["tokens"]))]}
            for s in by_id.values()]


def nominal_sentences(rows, source: str) -> list[dict]:
    """QANom detector sentences -> nominal labels: True = 1, False / O = 0."""
    return [{"id": f"{source}:{r['sentence_index']}", "tokens": r["tokens"], "source": source,
             "labels": [[IGNORE, int(lab == "True")] for lab in r["labels"]]} for r in rows]


def merge_sentences(items: list[dict]) -> list[dict]:
    """Identical token sequences become one sentence whose labels are the union of the known ones
    (a positive wins if two copies disagree)."""
    out: dict[tuple, dict] = {}
    for it in items:
        key = tuple(it["tokens"])
        if key not in out:
            out[key] = {**it, "labels": [list(x) for x in it["labels"]], "ids": [it["id"]]}
            continue
        m = out[key]
        m["ids"].append(it["id"])
        m["source"] = "+".join(sorted(set(m["source"].split("+")) | {it["source"]}))
        for a, b in zip(m["labels"], it["labels"]):
            for h in range(2):
                if b[h] != IGNORE:
                    a[h] = b[h] if a[h] == IGNORE else max(a[h], b[h])
    return list(out.values())


def norm_text(tokens) -> str:
    return " ".join(tokens).lower()


def load_data(cfg: DictConfig) -> dict:
    """Train / dev / test sentences, the gold verb forms of dev / test, the Bank records (for the
    verb-form tables) and the leakage report. Dev = QA-SRL GS dev verbs + QANom detector dev;
    test = GS test verbs + QANom detector test."""
    check_inputs(cfg)
    d = cfg.data
    paths = {k: _path(d[k]) for k in DATA_KEYS}
    forms = {k: _path(d[k]) for k in FORM_KEYS if d.get(k)}
    bank = list(read_jsonl(paths["bank_train"]))
    gs = {s: list(read_jsonl(paths[f"gs_{s}"])) for s in ("dev", "test")}
    nom_records = {s: list(read_jsonl(forms[f"nominal_forms_{s}"])) for s in ("dev", "test")
                   if f"nominal_forms_{s}" in forms}
    # 1) no evaluation document in the Bank offline set (a build bug if so: raise)
    check_no_leakage({str(paths["bank_train"]): bank},
                     evaluation_documents(gs["dev"], gs["test"], *nom_records.values()))

    n_eval = d.get("max_eval_sentences")
    sets = {}
    for split in ("dev", "test"):
        items = verb_sentences(gs[split], f"qasrl-gs.{split}")
        items += nominal_sentences(read_jsonl(paths[f"qanom_{split}"]), f"qanom.{split}")
        if n_eval:  # first N of each source
            by = defaultdict(list)
            for it in items:
                by[it["source"]].append(it)
            items = [it for v in by.values() for it in v[: int(n_eval)]]
        sets[split] = merge_sentences(items)
    train = verb_sentences(bank, "qasrl-bank") + nominal_sentences(read_jsonl(paths["qanom_train"]), "qanom")

    # 2) no training sentence equal to a dev / test sentence (all of them, not just the sampled ones)
    eval_texts = {norm_text(r["tokens"]) for s in ("dev", "test") for r in gs[s]}
    eval_texts |= {norm_text(r["tokens"]) for s in ("dev", "test") for r in read_jsonl(paths[f"qanom_{s}"])}
    dropped = Counter(it["source"] for it in train if norm_text(it["tokens"]) in eval_texts)
    train = [it for it in train if norm_text(it["tokens"]) not in eval_texts]
    assert not any(norm_text(it["tokens"]) in eval_texts for it in train), "leakage: a dev/test sentence in train"
    train = merge_sentences(train)
    if d.get("max_train_sentences"):
        rng = random.Random(cfg.seed)
        train = rng.sample(train, min(len(train), int(d.max_train_sentences)))

    gold_forms = {}
    for split in ("dev", "test"):
        vf = {}
        if f"verbal_forms_{split}" in forms:  # the Bank release's stems (GS's own verb_form is a table lookup)
            for r in read_jsonl(forms[f"verbal_forms_{split}"]):
                vf[(r["sentence_id"], r["predicate_index"])] = (r["predicate"], r["verb_form"])
        verbal = []
        for r in gs[split]:
            hit = vf.get((r["sentence_id"], r["predicate_index"]))
            if hit and hit[0] == r["predicate"]:
                verbal.append((r["predicate"], hit[1]))
            elif not vf:
                verbal.append((r["predicate"], r["verb_form"]))
        nominal = [(r["predicate"], r["verb_form"]) for r in nom_records.get(split, [])
                   if r.get("predicate_type") == "nominal" and r.get("verb_form")]
        gold_forms[split] = {"verbal": verbal, "nominal": nominal}
    return {"train": train, "dev": sets["dev"], "test": sets["test"], "gold_forms": gold_forms, "bank_records": bank,
            "leakage": {"train_sentences_equal_to_eval_dropped": dict(dropped), "bank_documents_checked": True}}


# ---------------------------------------------------------------------------- verb-form tables
def build_verb_forms(cfg: DictConfig, bank_records=None) -> tuple[VerbForms, dict]:
    """The tables saved into the checkpoint (so inference needs no data directory); see
    data_prep.verb_form_tables.build_tables. `resources.nominal_order` orders the noun tables."""
    paths = {k: _require(_path(cfg.resources[k]), f"resources.{k}") for k in RESOURCE_KEYS}
    if bank_records is None:
        bank_records = list(read_jsonl(_require(_path(cfg.data.bank_train), "data.bank_train")))
    order = cfg.resources.nominal_order
    verbal, nominal, rank, stats = build_tables(
        [(x["predicate"], x["verb_form"]) for x in bank_records], **paths,
        **({"nominal_order": list(order)} if order else {}))
    return VerbForms(verbal, nominal, rank), stats


# ---------------------------------------------------------------------------- training windows
def encode_training(items: list[dict], tokenizer, max_length: int, overlap: int):
    """A `datasets.Dataset` of the sentences' windows (models.predicates.encode_windows: what the
    detector reads at inference): input_ids, and labels [[verbal, nominal]] per sub-token, IGNORE
    except at each word's first sub-token. A word in two windows is trained in both."""
    from datasets import Dataset

    ids, labels = [], []
    for it, p in zip(items, word_pieces(tokenizer, [it["tokens"] for it in items])):
        if not p:
            continue
        for w in encode_windows(p, max_length, overlap, tokenizer.cls_token_id, tokenizer.sep_token_id):
            lab = [[IGNORE, IGNORE] for _ in w["input_ids"]]
            for pos, word_label in zip(w["first"], it["labels"][w["start"]: w["end"]]):
                lab[pos] = list(word_label)
            ids.append(w["input_ids"])
            labels.append(lab)
    return Dataset.from_dict({"input_ids": ids, "labels": labels})
