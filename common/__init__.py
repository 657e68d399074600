"""Glue shared by the train/ and evaluation/ entry points (which never import each other):
the processed-data loader, W&B tracking and the Hub publisher."""
