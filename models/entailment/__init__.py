"""QA entailment: P(supported) of a "question answer" hypothesis given a reference (lexical, embedding,
neural and stacked scorers), the stacked scorer's features and the reference's own QAs, checkpoint files."""
from models.entailment.io import FORMAT_FILE, load_format, load_scorer, load_stacked, save_format
from models.entailment.neural import (FAMILIES, CausalLMScorer, CrossEncoderScorer, NeuralScorer, Seq2SeqScorer, model_class,
                                     scorer_class)
from models.entailment.scorers import EmbeddingScorer, LexicalScorer, MajorityScorer, Scorer
from models.entailment.stacked import StackedScorer, predicate_keys, score_qas
