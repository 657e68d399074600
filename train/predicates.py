"""Train the predicate detector (models/predicates.py): verbal and nominal predicates of raw text.

    python -m train.predicates paths.data_dir=../shared/data hydra.run.dir=outputs/predicates
    python -m train.predicates detector_model=tiny train.max_train_sentences=64     # the test model

A BERT token classifier with two independent sigmoid outputs per word (verbal, nominal), trained
with a masked binary cross-entropy because each source labels only one of them:
- QA-SRL Bank offline set (`qasrl-bank.train-offline.jsonl`): every verb of a sentence is a
  record (also those with no QA), so a sentence's predicate_index values are its verbs: verbal = 1
  there, 0 elsewhere; nominal unknown.
- QANom predicate-detector sentences (`qanom-predicates.<split>.jsonl`): True = nominal predicate
  (1), False / O = not (0); verbal unknown.
Identical sentences from both sources are merged (both labels known). Dev = QA-SRL GS dev verbs +
QANom detector dev; each type's threshold is the one with the best dev F1. Test = GS test verbs +
QANom detector test. The run dir gets checkpoint/ (model, tokenizer, predicate_detector.json with
the thresholds, verb_forms.json) and metrics.json (= all_results.json).

Leakage: the Bank offline set must hold no GS / QANom evaluation document (checked, raises), and no
training sentence may equal a dev / test sentence. The published QANom train split repeats 6
dev / test sentences word for word (and the Bank offline set 1, from another document): those are
dropped, counted in metrics.json, and the result is asserted before training.
"""
from __future__ import annotations

import json
import logging
import math
import random
import time
from collections import Counter, defaultdict
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from data_prep.leakage import check_no_leakage, evaluation_documents
from data_prep.records import read_jsonl
from metrics.qasrl import prf as qasrl_prf
from models.predicates import LABELS, PredicateDetector, VerbForms, decide, encode_windows, pad_batch, word_pieces
from models.model_paths import resolve_model_path

log = logging.getLogger(__name__)

IGNORE = -100  # an unknown label


# ---------------------------------------------------------------------------- loss
def masked_bce(logits, labels):
    """Mean binary cross-entropy over the known labels only. logits, labels: [batch, tokens, 2];
    labels are 1 / 0, or IGNORE where unknown (the other source's type, padding, non-first
    sub-tokens). Unknown entries get no loss and no gradient."""
    import torch.nn.functional as F

    known = labels != IGNORE
    if not bool(known.any()):
        return logits.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits.float()[known], labels.float()[known])


# ---------------------------------------------------------------------------- data
def _path(p) -> Path:
    return Path(hydra.utils.to_absolute_path(str(p)))


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{what}: {path} not found (build the records with `python -m data_prep.build "
                                "paths.data_dir=../shared/data`, or set paths.data_dir / QASEM_DATA_DIR)")
    return path


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


DATA_KEYS = ("bank_train", "qanom_train", "gs_dev", "qanom_dev", "gs_test", "qanom_test")
FORM_KEYS = ("verbal_forms_dev", "verbal_forms_test", "nominal_forms_dev", "nominal_forms_test")  # optional
RESOURCE_KEYS = ("qanom_train_records", "nom_verb_pairs", "catvar", "inflections")


def check_inputs(cfg: DictConfig) -> None:
    """Fail before reading or training anything: every input file named, the detector known."""
    for k in DATA_KEYS:
        _require(_path(cfg.data[k]), f"data.{k}")
    for k in FORM_KEYS:
        if cfg.data.get(k):
            _require(_path(cfg.data[k]), f"data.{k}")
    for k in RESOURCE_KEYS:
        _require(_path(cfg.resources[k]), f"resources.{k}")
    c = cfg.detector_model
    if not c.get("random_config") and not c.get("model_name_or_path"):
        raise ValueError("detector needs model_name_or_path ('minilm', a folder, a Hub id) or random_config")
    if int(c.max_length) < 3:
        raise ValueError(f"detector.max_length={c.max_length}: a window needs [CLS], a word and [SEP]")


def load_data(cfg: DictConfig) -> dict:
    """Returns train / dev / test sentences, the gold verb forms and the leakage report."""
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

    n_eval = cfg.eval.get("max_sentences")
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
    if cfg.train.get("max_train_sentences"):
        rng = random.Random(cfg.seed)
        train = rng.sample(train, min(len(train), int(cfg.train.max_train_sentences)))

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
def _majority(pairs) -> dict[str, str]:
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
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
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
    for line in path.read_text(encoding="utf-8").splitlines():
        forms = [f.lower() for f in line.split("\t")]
        if not forms or not forms[0]:
            continue
        for f in dict.fromkeys(forms):
            if f and forms[0] not in readings[f]:
                readings[f].append(forms[0])
    return readings


def pick_stem(form: str, stems: list[str], verb_freq: Counter, known_verbs: set[str]) -> str:
    """The reading of an ambiguous form: the verb seen most in the training verbs (ran -> run, not
    'rin'; shot -> shoot), then one CatVar knows (judged -> judge, not the table's 'judg'), then the
    form's own stem reading (data_prep.verb_forms' rule: lay -> lay), then file order."""
    return max(stems, key=lambda st: (verb_freq[st], st in known_verbs, st == form, -stems.index(st)))


NOMINAL_SOURCES = ("qanom_train", "catvar", "nom_verb_pairs")


def build_verb_forms(cfg: DictConfig, bank_records=None) -> tuple[VerbForms, dict]:
    """The tables saved into the checkpoint (so inference needs no data directory).
    verbal: the QA-SRL Bank training verbs' release stems, then the Wiktionary inflection table
    (ambiguous forms: see pick_stem). nominal: in `resources.nominal_order` (default: QANom training
    predicates' verb_form, then CatVar, then the heuristic noun->verb pairs)."""
    paths = {k: _require(_path(cfg.resources[k]), f"resources.{k}") for k in RESOURCE_KEYS}
    if bank_records is None:
        bank_records = list(read_jsonl(_require(_path(cfg.data.bank_train), "data.bank_train")))
    bank_pairs = [(x["predicate"], x["verb_form"]) for x in bank_records]
    verbal = _majority(bank_pairs)
    n_bank = len(verbal)
    verb_freq = Counter(f.lower() for _, f in bank_pairs if f)
    catvar, catvar_verbs = read_catvar(paths["catvar"])
    for form, stems in read_inflections(paths["inflections"]).items():
        verbal.setdefault(form, pick_stem(form, stems, verb_freq, catvar_verbs))

    sources = {"qanom_train": lambda: _majority((x["predicate"], x["verb_form"])
                                                for x in read_jsonl(paths["qanom_train_records"])
                                                if x.get("predicate_type") == "nominal"),
               "catvar": lambda: catvar,
               "nom_verb_pairs": lambda: _pairs(paths["nom_verb_pairs"])}
    order = list(cfg.resources.get("nominal_order") or NOMINAL_SOURCES)
    unknown = set(order) - set(NOMINAL_SOURCES)
    if unknown:
        raise ValueError(f"resources.nominal_order: unknown {sorted(unknown)}; expected names from {NOMINAL_SOURCES}")
    nominal: dict[str, str] = {}
    rank: dict[str, int] = {}
    stats = {"verbal": {"bank_train": n_bank, "wiktionary": len(verbal) - n_bank}, "nominal": {}}
    for r, name in enumerate(order):
        before = len(nominal)
        for noun, verb in sources[name]().items():
            if noun not in nominal:
                nominal[noun], rank[noun] = verb, r
        stats["nominal"][name] = len(nominal) - before
    return VerbForms(verbal, nominal, rank), stats


def _pairs(path: Path) -> dict[str, str]:
    """QANom heuristic `nominalization<TAB>verb` lines; a noun listed twice keeps its first verb."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0] and parts[1]:
            out.setdefault(parts[0].lower(), parts[1].lower())
    return out


# ---------------------------------------------------------------------------- model
def build_model(cfg: DictConfig):
    import torch
    from transformers import AutoConfig, AutoModelForTokenClassification, AutoTokenizer

    c = cfg.detector_model
    id2label = dict(enumerate(LABELS))
    if c.get("random_config"):
        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(c.get("tokenizer") or "minilm"))
        mconf = AutoConfig.for_model(**OmegaConf.to_container(c.random_config, resolve=True))
        mconf.num_labels, mconf.id2label, mconf.label2id = 2, id2label, {v: k for k, v in id2label.items()}
        torch.manual_seed(cfg.seed)
        model = AutoModelForTokenClassification.from_config(mconf)
    else:
        path = resolve_model_path(c.model_name_or_path)
        tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(c.get("tokenizer") or c.model_name_or_path))
        model = AutoModelForTokenClassification.from_pretrained(path, num_labels=2, id2label=id2label,
                                                                label2id={v: k for k, v in id2label.items()})
    model.config.problem_type = "multi_label_classification"  # two independent sigmoids
    return model, tokenizer


def encode_training(items: list[dict], tokenizer, max_length: int, overlap: int) -> list[dict]:
    """Windows of the training sentences with their word labels (a word in two windows is trained
    in both)."""
    out = []
    pieces = word_pieces(tokenizer, [it["tokens"] for it in items])
    for it, p in zip(items, pieces):
        if not p:
            continue
        for w in encode_windows(p, max_length, overlap, tokenizer.cls_token_id, tokenizer.sep_token_id):
            out.append({"input_ids": w["input_ids"], "first": w["first"],
                        "labels": it["labels"][w["start"]: w["end"]]})
    return out


def collate(batch: list[dict], pad_id: int):
    import torch

    ids, mask = pad_batch([b["input_ids"] for b in batch], pad_id)
    labels = torch.full((len(batch), ids.shape[1], 2), IGNORE, dtype=torch.long)
    for r, b in enumerate(batch):
        labels[r, b["first"]] = torch.tensor(b["labels"], dtype=torch.long)
    return ids, mask, labels


def length_batches(examples: list[dict], batch_size: int, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of similar length (sorted within pools of 50 batches): less padding."""
    idx = list(range(len(examples)))
    rng.shuffle(idx)
    pool = batch_size * 50
    batches = []
    for s in range(0, len(idx), pool):
        chunk = sorted(idx[s: s + pool], key=lambda i: len(examples[i]["input_ids"]))
        batches += [chunk[b: b + batch_size] for b in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def fit(cfg: DictConfig, model, tokenizer, examples: list[dict], device: str) -> dict:
    """A plain loop: AdamW, linear warmup then linear decay on progress = max(step share, time
    share), so a run stopped by max_minutes still ends at a small learning rate."""
    import torch

    t = cfg.train
    rng = random.Random(cfg.seed)
    per_epoch = math.ceil(len(examples) / t.batch_size)
    total = max(1, int(per_epoch * float(t.epochs)))
    warmup = int(float(t.warmup_ratio) * total)
    max_s = float(t.max_minutes) * 60 if t.get("max_minutes") else None
    decay, no_decay = [], []
    for n, p in model.named_parameters():
        (no_decay if p.ndim < 2 or "LayerNorm" in n else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": float(t.weight_decay)},
                             {"params": no_decay, "weight_decay": 0.0}], lr=float(t.lr))
    model.to(device).train()
    use_bf16 = bool(cfg.get("bf16"))
    start, step, losses, stopped = time.time(), 0, [], None
    while step < total and stopped is None:
        for batch in length_batches(examples, int(t.batch_size), rng):
            elapsed = time.time() - start
            if step >= total:
                break
            if max_s and elapsed >= max_s:
                stopped = "max_minutes"
                break
            progress = max(step / total, elapsed / max_s if max_s else 0.0)
            lr = float(t.lr) * (step / max(1, warmup) if step < warmup else max(0.0, 1.0 - progress))
            for g in opt.param_groups:
                g["lr"] = lr
            ids, mask, labels = collate([examples[i] for i in batch], tokenizer.pad_token_id)
            with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=use_bf16):
                logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            loss = masked_bce(logits, labels.to(device))
            if not torch.isfinite(loss):
                raise FloatingPointError(f"non-finite loss {loss.item()} at step {step}")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            step += 1
            if step % int(t.log_every) == 0:
                recent = losses[-int(t.log_every):]
                log.info("step %d/%d  loss %.4f  lr %.2e  %.1f min", step, total, sum(recent) / len(recent), lr,
                         (time.time() - start) / 60)
    stopped = stopped or "epochs"
    model.eval()
    return {"steps": step, "planned_steps": total, "epochs_done": round(step / per_epoch, 3),
            "windows": len(examples), "minutes": round((time.time() - start) / 60, 2), "stopped_by": stopped,
            "first_loss": losses[0] if losses else None,
            "final_loss": sum(losses[-50:]) / len(losses[-50:]) if losses else None}


# ---------------------------------------------------------------------------- evaluation
def prf(tp: int, n_pred: int, n_gold: int) -> dict:
    """The QA-SRL metrics' P/R/F1 (0 when undefined) with the predicted and gold counts."""
    m = qasrl_prf(tp, n_pred - tp, n_gold - tp)
    return {"precision": m["precision"], "recall": m["recall"], "f1": m["f1"], "n_gold": n_gold, "n_pred": n_pred}


def best_threshold(scores: list[float], gold: list[int]) -> float:
    """The threshold (grid 0.01..0.99) with the best F1; ties go to the one nearest 0.5."""
    if not any(gold):
        return 0.5
    best = None
    for k in range(1, 100):
        thr = k / 100
        tp = sum(1 for s, g in zip(scores, gold) if g and s >= thr)
        n_pred = sum(1 for s in scores if s >= thr)
        key = (prf(tp, n_pred, sum(gold))["f1"], -abs(thr - 0.5))
        if best is None or key > best[0]:
            best = (key, thr)
    return best[1]


def head_scores(items, probs, head: int):
    scores, gold = [], []
    for it, ps in zip(items, probs):
        for lab, p in zip(it["labels"], ps):
            if lab[head] != IGNORE:
                scores.append(p[head])
                gold.append(int(lab[head]))
    return scores, gold


def detection_metrics(items, probs, thresholds: dict) -> dict:
    """Per type: a word counts as predicted of that type when `decide` (detect()'s rule) says so;
    only words whose label of that type is known are scored."""
    out = {}
    for head, name in enumerate(LABELS):
        tp = n_pred = n_gold = 0
        for it, ps in zip(items, probs):
            for lab, (pv, pn) in zip(it["labels"], ps):
                if lab[head] == IGNORE:
                    continue
                d = decide(pv, pn, thresholds)
                pred = d is not None and d[0] == name
                n_pred += pred
                n_gold += lab[head] == 1
                tp += pred and lab[head] == 1
        out[name] = {**prf(tp, n_pred, n_gold),
                     "n_sentences": sum(1 for it in items if any(lab[head] != IGNORE for lab in it["labels"]))}
    return out


def verb_form_accuracy(verb_forms: VerbForms, gold: dict) -> tuple[dict, dict, dict]:
    """Share of gold predicates whose looked-up verb form equals the gold one (lower-cased)."""
    acc, n, fallback = {}, {}, {}
    for ptype in LABELS:
        pairs = gold.get(ptype, [])
        looked = [verb_forms.lookup(w, ptype, with_source=True) for w, _ in pairs]
        hits = sum(1 for (f, _), (_, g) in zip(looked, pairs) if f == g.lower())
        acc[ptype] = hits / len(pairs) if pairs else None
        n[ptype] = len(pairs)
        fallback[ptype] = sum(1 for _, s in looked if s == "fallback")
    return acc, n, fallback


def evaluate(detector: PredicateDetector, items, thresholds, gold_forms) -> dict:
    probs = detector.word_probs([it["tokens"] for it in items])
    m = detection_metrics(items, probs, thresholds)
    m["verb_form_accuracy"], m["verb_form_n"], m["verb_form_fallback"] = verb_form_accuracy(detector.verb_forms, gold_forms)
    return m


# ---------------------------------------------------------------------------- entry point
def train(cfg: DictConfig, run_dir: str | Path | None = None) -> dict:
    """Check inputs, train, choose the thresholds on dev, score test, save checkpoint/ and
    metrics.json; returns the metrics."""
    import torch
    from transformers import set_seed

    run_dir = Path(run_dir or cfg.get("output_dir") or ".")
    check_inputs(cfg)
    data = load_data(cfg)
    verb_forms, table_stats = build_verb_forms(cfg, data.pop("bank_records"))
    run_dir.mkdir(parents=True, exist_ok=True)
    set_seed(cfg.seed)
    device = cfg.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    model, tokenizer = build_model(cfg)
    c = cfg.detector_model
    examples = encode_training(data["train"], tokenizer, int(c.max_length), int(c.window_overlap))
    log.info("training on %d sentences (%d windows); dev %d, test %d sentences", len(data["train"]),
             len(examples), len(data["dev"]), len(data["test"]))
    fit_stats = fit(cfg, model, tokenizer, examples, device)

    detector = PredicateDetector(model, tokenizer, verb_forms, max_length=int(c.max_length),
                                 window_overlap=int(c.window_overlap), batch_size=int(cfg.eval.batch_size),
                                 device=device)
    dev_probs = detector.word_probs([it["tokens"] for it in data["dev"]])
    thresholds = {name: best_threshold(*head_scores(data["dev"], dev_probs, h)) for h, name in enumerate(LABELS)}
    detector.thresholds = thresholds
    dev = detection_metrics(data["dev"], dev_probs, thresholds)
    dev["verb_form_accuracy"], dev["verb_form_n"], dev["verb_form_fallback"] = \
        verb_form_accuracy(verb_forms, data["gold_forms"]["dev"])
    test = evaluate(detector, data["test"], thresholds, data["gold_forms"]["test"])

    ckpt = detector.save_pretrained(run_dir / "checkpoint", extra={
        "trained_on": "QA-SRL Bank offline set (verbal) + QANom predicate-detector train (nominal)",
        "thresholds_chosen_on": "QA-SRL GS dev verbs + QANom predicate-detector dev (best F1 per type)",
        "command": "python -m train.predicates " + " ".join(_overrides())})
    by_source = Counter(it["source"] for it in data["train"])
    metrics = {"dev": dev, "test": test, "thresholds": thresholds,
               "train": {"sentences": len(data["train"]), "by_source": dict(by_source), **fit_stats},
               "leakage": data["leakage"], "verb_form_tables": table_stats, "detector": c.name,
               "checkpoint": str(ckpt)}
    for name in ("metrics.json", "all_results.json"):
        (run_dir / name).write_text(json.dumps(metrics, indent=1))
    return metrics


def _overrides() -> list[str]:
    try:
        from hydra.core.hydra_config import HydraConfig

        return list(HydraConfig.get().overrides.task)
    except Exception:
        return []


def _line(m: dict) -> str:
    return "  ".join(f"{k} P {m[k]['precision']:.3f} R {m[k]['recall']:.3f} F1 {m[k]['f1']:.3f}" for k in LABELS)


@hydra.main(version_base="1.3", config_path="../conf", config_name="train_predicates")
def main(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig

    metrics = train(cfg, HydraConfig.get().runtime.output_dir)
    log.info("thresholds %s", metrics["thresholds"])
    log.info("dev:  %s  verb forms %s", _line(metrics["dev"]), metrics["dev"]["verb_form_accuracy"])
    log.info("test: %s  verb forms %s", _line(metrics["test"]), metrics["test"]["verb_form_accuracy"])


if __name__ == "__main__":
    main()
