"""The parser's training, both kinds (seq2seq, span-first) under one entry point, `python -m train.parser`:
one run directory and resume rule, the best checkpoint by dev UA F1, the Hub push."""
from train.parser.run import VOLATILE_KEYS, check_config, qa_format_of, train
from train.parser.shared import publish
