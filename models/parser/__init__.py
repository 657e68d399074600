"""The QASem parser, both kinds (seq2seq text, span-first), with its QA text format, question slots and
templates, and answer alignment; `load_parser(checkpoint)` gives whichever kind a folder holds."""
from models.parser.load import load_parser
from models.parser.seq2seq import FORMAT_FILE, PARSER_FILE, QASemParser, decode_texts
from models.parser.span import SpanParser
