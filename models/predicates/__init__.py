"""The predicate detector: verbal and nominal predicates of raw tokenized text, with their verb forms."""
from models.predicates.detector import LABELS, PredicateDetector, VerbForms, decide, encode_windows, word_pieces
