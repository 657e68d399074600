"""The predicate detector's training, `python -m train.predicates`: token labels from the QA-SRL / QANom
records, thresholds and verb forms chosen on dev, test read once, the Hub push."""
from train.predicates.run import VOLATILE_KEYS, train
