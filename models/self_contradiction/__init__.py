"""Self-contradiction of a language model's own text, fact by fact (ChatProtect's trigger, detect and mitigate
on QASem QAs): texts.py (sentences and their QAs), trigger.py (alternatives from a QA with its answer
withheld), detect.py (pairs within a text and triggered pairs, scored by the contradiction model),
mitigate.py (delete or revise), measures.py, loop.py (the whole loop)."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "texts": ["AnalysedText", "analyse_texts", "detokenize"],
    "detect": ["ContradictionScorer", "within_text_pairs"],
    "trigger": ["TriggerSettings", "trigger_pairs"],
    "mitigate": ["mitigate_text", "MITIGATIONS"],
    "measures": ["run_measures"],
    "loop": ["LoopSettings", "self_contradiction_loop", "generate_texts"],
    "components": ["model_paths", "load_scorer_components"],
})
