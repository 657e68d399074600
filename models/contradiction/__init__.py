"""Self-contradiction of two sentences: the pair encoder, the QA alignment features, and the stacked
model over both that says P(contradiction) and which facts conflict."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "model": ["FEATURES", "ContradictionModel", "add_encoder_scores", "align_passing", "analyse_pair",
              "analyse_pairs", "encoder_probs", "entailment_only", "gated", "load_components", "scorable",
              "similarities"],
    "ensemble": ["ContradictionEnsemble", "load_contradiction_model", "write_ensemble"],
})
