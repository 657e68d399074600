"""The parser's model families, one class each: conf/model/NAME.yaml names its class by `_target_`, and
train.parser instantiates it once (`build_family`) and hands the object down. A seq2seq family checks its
settings, names its tokenizer and builds a fresh model (models/parser/seq2seq_model.py); the span family
trains through train/parser/span.py (which reads the model group itself).

Each config keeps its `kind` key: the name a user writes (model.kind), that run directories store in their
configuration, and that a span checkpoint's parser_config.json records. `build_family` checks that it names
the class's kind, and takes the class from `kind` alone for a model config of its own written before
`_target_` (a stored configuration, a user's file)."""
from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

from models.parser import seq2seq_model as S


class ParserFamily:
    """A model config's family; `settings` is the config group (kind included) as the builders read it."""
    kind: str
    span = False  # the span-first parser (train/parser/span.py), else a seq2seq text generator

    def __init__(self, kind: str, **settings):
        self.settings = OmegaConf.create({"kind": kind, **settings})

    def check(self) -> None:
        """Raise on settings that cannot build a model, before anything loads."""

    @property
    def label(self) -> str:
        return str(self.settings.get("name") or self.kind)

    @property
    def base_model(self) -> str | None:
        """The pretrained model it starts from (a Hub id or a folder; minilm for the offline weights)."""
        return self.settings.get("name")


class Span(ParserFamily):
    """The span-first parser: an encoder scores spans, one question template per span."""
    kind, span = "span", True

    def check(self) -> None:
        c = self.settings
        if not (c.encoder or c.encoder_config):
            raise ValueError("model.kind=span needs model.encoder (a Hub id, a folder, or minilm) or model.encoder_config")
        for key in ("max_span_width", "span_hidden", "max_subwords"):
            if int(c[key] or 0) < 1:
                raise ValueError(f"model.{key} must be a positive integer, got {c[key]!r}")

    @property
    def base_model(self) -> str | None:
        return self.settings.encoder


class Seq2SeqFamily(ParserFamily):
    """A model that writes the QA text: `new_model` builds it, `build_model` gives it the format's tokens."""
    t5 = False  # the T5 family overflows to NaN in fp16: train.parser refuses fp16 for it before any weight loads

    def tokenizer_name(self) -> str:
        return self.settings.tokenizer or self.settings.name

    def build_tokenizer(self, fmt):
        return S.build_tokenizer(self.tokenizer_name(), fmt)

    def new_model(self, tokenizer):
        raise NotImplementedError

    def build_model(self, tokenizer):
        """A fresh (pretrained or random) model for training; `tokenizer` has the format's tokens."""
        self.check()
        return S.finish_model(self.new_model(tokenizer), self.settings, tokenizer)


class Seq2Seq(Seq2SeqFamily):
    """Any Hub / local seq2seq LM by name (google/flan-t5-xl, t5-small, a folder)."""
    kind = "seq2seq"

    @property
    def t5(self) -> bool:
        return any(t in str(self.settings.name or "").lower() for t in ("t5", "ul2"))

    def check(self) -> None:
        if not self.settings.name:
            raise ValueError("model.kind=seq2seq needs model.name (a Hub id or a folder)")

    def new_model(self, tokenizer):
        return S.pretrained_seq2seq(self.settings, tokenizer)


class EncoderDecoder(Seq2SeqFamily):
    """An EncoderDecoderModel warm-started from two encoders (the offline MiniLM)."""
    kind = "encoder_decoder"

    def tokenizer_name(self) -> str:
        return self.settings.tokenizer or self.settings.encoder

    def check(self) -> None:
        for part in ("encoder", "decoder"):
            if not self.settings[part]:
                raise ValueError(f"model.kind=encoder_decoder needs model.{part}")

    def new_model(self, tokenizer):
        return S.encoder_decoder(self.settings, tokenizer)


class TinyT5(Seq2SeqFamily):
    """A randomly initialised T5 of a few thousand weights, for tests."""
    kind, t5 = "tiny_t5", True

    def new_model(self, tokenizer):
        return S.tiny_t5(self.settings, tokenizer)


FAMILIES = {c.kind: c for c in (Seq2Seq, EncoderDecoder, TinyT5, Span)}


def build_family(model: DictConfig) -> ParserFamily:
    """The family that cfg.model describes: its `_target_` instantiated with the other keys (or, for a config
    without one, the class of its `kind`). Its `kind` must be that class's."""
    from hydra.utils import get_class, instantiate

    if model.get("kind") not in FAMILIES:
        raise ValueError(f"model.kind {model.get('kind')!r} is unknown; expected one of {tuple(FAMILIES)}")
    if "_target_" not in model:
        family = FAMILIES[model.kind](**{k: v for k, v in OmegaConf.to_container(model, resolve=True).items()})
        family.check()
        return family
    cls = get_class(model._target_)
    if not (isinstance(cls, type) and issubclass(cls, ParserFamily)):
        raise ValueError(f"model._target_ {model._target_} is not a train.parser.families.ParserFamily")
    if model.kind != cls.kind:
        raise ValueError(f"model.kind={model.kind!r} is not its _target_'s ({model._target_}: {cls.kind!r}); "
                         f"choose the model by model=NAME (conf/model/), or set model._target_ with model.kind")
    family = instantiate(model, _convert_="all")
    family.check()
    return family
