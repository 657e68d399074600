"""The predicate detector: verbal and nominal predicates of raw tokenized text, with their verb forms."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "detector": ["LABELS", "PredicateDetector", "VerbForms", "decide", "encode_windows", "word_pieces"],
})
