"""The QASem parser, both kinds (seq2seq text, span-first), with its QA text format, question slots and
templates, and answer alignment; `load_parser(checkpoint)` gives whichever kind a folder holds."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "load": ["load_parser"],
    "seq2seq": ["FORMAT_FILE", "PARSER_FILE", "QASemParser", "decode_texts"],
    "span": ["SpanParser"],
})
