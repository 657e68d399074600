"""python -m train.contradiction [overrides]: conf/train_contradiction.yaml composed by Hydra, then train.contradiction.train."""
import sys

from common.renamed_keys import RenamedKey, refuse_renamed
from train.contradiction.run import main

try:  # before Hydra composes: it would answer a renamed key with "not in struct", not its new name
    refuse_renamed(sys.argv[1:], "train_contradiction")
except RenamedKey as e:
    sys.exit(str(e))
main()
