"""Weights & Biases logging for amago runs (``logging.log_to_wandb``), a log backend on amago-core's public hooks."""
