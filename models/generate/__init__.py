"""Language models that write text: an OpenAI-compatible endpoint or an in-process Hugging Face causal LM,
behind one interface (models/generate/base.py), with an on-disk response cache."""
from models.exports import lazy_exports

__getattr__ = lazy_exports(__name__, {
    "base": ["Generation", "Generator", "SamplingSettings"],
    "cache": ["ResponseCache"],
    "openai_endpoint": ["OpenAIGenerator"],
    "local": ["LocalGenerator"],
})
