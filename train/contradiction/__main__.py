"""python -m train.contradiction [overrides]: conf/train_contradiction.yaml composed by Hydra, then train.contradiction.train."""
from train.contradiction.run import main

main()
