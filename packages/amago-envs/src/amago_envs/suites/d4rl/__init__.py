"""The ``d4rl`` env suite: D4RL-style offline RL from local minari datasets, then optional online fine-tuning."""
