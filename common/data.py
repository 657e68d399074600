"""Records -> tokenized seq2seq datasets for the parser.

Where records come from, in order: `<processed_dir>/<name>.jsonl` when built; else built now from
`paths.data_dir` when it holds the releases; else the small hand-written sample that ships with
the repo (with a loud warning: a result on it means nothing).
"""
from __future__ import annotations

import logging
import random
from pathlib import Path

from datasets import Dataset

from data_prep.records import read_jsonl
from models.parser.qa_format import QAFormat

log = logging.getLogger(__name__)

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "data_prep" / "sample"
RELEASE_MARKERS = ("qasrl-gs", "qanom")
DEFAULT_DATA_DIR = "data/raw"  # conf/paths/default.yaml when QASEM_DATA_DIR is not set


def resolve_processed_dir(paths_cfg, names: list[str], use_sample: bool = False) -> tuple[Path, bool]:
    """(folder holding `<name>.jsonl` for every name, whether it is the shipped sample)."""
    if use_sample:
        return SAMPLE_DIR, True
    processed = Path(paths_cfg.processed_dir)
    if all((processed / f"{n}.jsonl").exists() for n in names):
        return processed, False
    data_dir = Path(paths_cfg.data_dir)
    if all((data_dir / m).is_dir() for m in RELEASE_MARKERS):
        from data_prep.build import RAW_INPUTS, build

        for n in names:  # before the build: name the raw file a processed one needs, and the fix
            if n in RAW_INPUTS and not (data_dir / RAW_INPUTS[n]).exists():
                raise FileNotFoundError(
                    f"data file {n}.jsonl is built from {(data_dir / RAW_INPUTS[n]).absolute()}, which is missing. "
                    f"Fetch it: python -m data_prep.download paths.data_dir={data_dir} (or put the file there by hand)")

        log.info("building processed records from %s into %s", data_dir, processed)
        build(data_dir, processed)
        missing = [n for n in names if not (processed / f"{n}.jsonl").exists()]
        if missing:
            raise FileNotFoundError(f"data files {missing} are not produced from {data_dir} "
                                    f"(the build writes: {sorted(p.stem for p in processed.glob('*.jsonl'))})")
        return processed, False
    if str(paths_cfg.data_dir) == DEFAULT_DATA_DIR:  # nothing configured: fall back, loudly
        log.warning("!" * 78)
        log.warning("NO DATA: %s holds no QA-SRL/QANom releases. Training on the tiny hand-written "
                    "sample in %s. THE RESULT MEANS NOTHING. Set paths.data_dir=DIR or QASEM_DATA_DIR "
                    "(python -m data_prep.download fetches the releases).",
                    data_dir.resolve(), SAMPLE_DIR)
        log.warning("!" * 78)
        return SAMPLE_DIR, True
    what = "does not exist" if not data_dir.exists() else f"holds none of the releases {RELEASE_MARKERS}"
    raise FileNotFoundError(f"data directory {data_dir.resolve()} (paths.data_dir) {what}, and the processed "
                            f"records {names} are not in {processed.resolve()} (paths.processed_dir). Fetch the "
                            f"releases: python -m data_prep.download paths.data_dir={data_dir}")


def load_train_dev(cfg) -> tuple[list[dict], list[dict], bool]:
    """(train records, dev records, whether they are the shipped sample) of a trainer config's
    `data` group (`train` / `dev` file names, `max_train` / `max_dev` seeded caps per file,
    `oversample`: {train file name: how many times its records appear}, after the cap)."""
    data = cfg.data
    folder, is_sample = resolve_processed_dir(cfg.paths, list(data.train) + list(data.dev),
                                               bool(data.get("use_sample", False)))
    times = oversample_of(data.get("oversample"), list(data.train))
    train = load_split(folder, list(data.train), "train", data.get("max_train"), cfg.seed, is_sample, times)
    dev = load_split(folder, list(data.dev), "dev", data.get("max_dev"), cfg.seed, is_sample)
    log.info("train: %d predicates from %s; dev: %d predicates from %s", len(train), list(data.train), len(dev),
             list(data.dev))
    return train, dev, is_sample


def oversample_of(spec, train_names: list[str]) -> dict[str, int]:
    """`data.oversample` checked: each key a training file of `data.train`, each value a whole number >= 1
    (a file's records repeated, so that a smaller set, QANom beside the QA-SRL Bank, weighs more per epoch)."""
    times = {}
    for name, n in dict(spec or {}).items():
        if name not in train_names:
            raise ValueError(f"data.oversample names {name!r}, which is not a training file of data.train {train_names}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"data.oversample.{name} must be a whole number >= 1 (times its records appear), got {n!r}")
        times[name] = n
    return times


def load_split(folder: Path, names: list[str], split: str, limit: int | None, seed: int,
               sample: bool, times: dict[str, int] | None = None) -> list[dict]:
    """Records of several files; `limit` caps each file (a seeded sample, so runs compare); `times`
    repeats a file's records (oversampling; the trainer shuffles them). The shipped sample has one
    file per split (train / dev / test), which oversampling does not apply to."""
    out = []
    for name, path in [(split, folder / f"{split}.jsonl")] if sample else [(n, folder / f"{n}.jsonl") for n in names]:
        recs = list(read_jsonl(path))
        if limit and len(recs) > limit:
            recs = random.Random(seed).sample(recs, limit)
        n = (times or {}).get(name, 1)
        if n > 1:
            log.info("%s: %d records x %d (data.oversample)", name, len(recs), n)
        out.extend(recs * n)
    return out


def tokenize(records: list[dict], fmt: QAFormat, tokenizer, max_source_length: int, max_target_length: int,
             with_index: bool = False) -> Dataset:
    """Tokenized dataset; sources / targets that do not fit are counted and reported."""
    sources, targets = zip(*(fmt.encode(r) for r in records)) if records else ((), ())
    enc, cut_src = _encode(tokenizer, list(sources), max_source_length, target=False)
    lab, cut_tgt = _encode(tokenizer, list(targets), max_target_length, target=True)
    if cut_src or cut_tgt:
        log.warning("%d of %d sources longer than %d tokens and %d targets longer than %d were truncated",
                    cut_src, len(records), max_source_length, cut_tgt, max_target_length)
    labels = lab["input_ids"]
    cls = tokenizer.cls_token_id
    if cls is not None:  # BERT-style targets open with [CLS]; it is already the decoder start token
        labels = [ids[1:] if ids and ids[0] == cls else ids for ids in labels]
    cols = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"], "labels": labels}
    if with_index:
        cols["idx"] = list(range(len(records)))
    return Dataset.from_dict(cols)


def _encode(tokenizer, texts: list[str], max_length: int, target: bool):
    """(encoding truncated to max_length, how many texts were cut). Texts are tokenized whole once;
    only the few that do not fit are tokenized again with the tokenizer's own truncation (which
    keeps its closing special token)."""
    kw = {"text_target": texts} if target else {"text": texts}
    enc = tokenizer(**kw)
    long = [i for i, ids in enumerate(enc["input_ids"]) if len(ids) > max_length]
    if long:
        kw = {"text_target": [texts[i] for i in long]} if target else {"text": [texts[i] for i in long]}
        cut = tokenizer(**kw, max_length=max_length, truncation=True)
        for key in enc.keys():
            for j, i in enumerate(long):
                enc[key][i] = cut[key][j]
    return enc, len(long)

