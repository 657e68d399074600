"""The parser a checkpoint holds, of either kind."""
from __future__ import annotations

from pathlib import Path

from models.checkpoint import checkpoint_folder, read_json
from models.parser.seq2seq import PARSER_FILE, QASemParser
from models.parser.span import SpanParser


def load_parser(checkpoint: str | Path, **kwargs):
    """The parser a checkpoint folder or Hub id holds: the span-first parser when its
    parser_config.json says kind=span, else the seq2seq QASemParser. Both map records to predicted
    records with `.predict(records) -> (predictions, counts)`. Options that only one kind has
    (`constrained`, `max_source_length` / `threshold`, `bf16`) are ignored by the other."""
    folder = checkpoint_folder(checkpoint)
    if (read_json(folder, PARSER_FILE) or {}).get("kind") == "span":
        keep = {k: v for k, v in kwargs.items() if k in ("batch_size", "device", "threshold", "bf16") and v is not None}
        return SpanParser.from_pretrained(folder, **keep)
    kwargs = {k: v for k, v in kwargs.items() if k not in ("threshold", "bf16") and v is not None}
    return QASemParser.from_pretrained(folder, **kwargs)
