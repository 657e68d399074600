"""python -m train.parser [overrides]: conf/train_parser.yaml composed by Hydra, then train.parser.train."""
from train.parser.run import main

main()
