"""python -m train.entailment [overrides]: conf/train_entailment.yaml composed by Hydra, then train.entailment.train."""
import sys

from common.renamed_keys import RenamedKey, refuse_renamed
from train.entailment.run import main

try:  # before Hydra composes: it would answer a renamed key with "not in struct", not its new name
    refuse_renamed(sys.argv[1:], "train_entailment")
except RenamedKey as e:
    sys.exit(str(e))
main()
