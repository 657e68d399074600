"""Scoring generated text against its reference at the level of facts: the pipeline (detector, parser,
entailment), its input checks, and the copular facts the parser does not produce."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "pipeline": ["ConsistencyPipeline"],
})
