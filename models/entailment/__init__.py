"""QA entailment: P(supported) of a "question answer" hypothesis given a reference (lexical, embedding,
neural and stacked scorers), the stacked scorer's features and the reference's own QAs, checkpoint files."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "io": ["FORMAT_FILE", "load_format", "load_scorer", "load_stacked", "save_format"],
    "neural": ["FAMILIES", "CausalLMScorer", "CrossEncoderScorer", "NeuralScorer", "Seq2SeqScorer", "model_class",
               "scorer_class"],
    "scorers": ["EmbeddingScorer", "LexicalScorer", "MajorityScorer", "Scorer"],
    "stacked": ["StackedScorer", "predicate_keys", "score_qas"],
})
