"""The ``babyai`` env suite: multi-task BabyAI (minigrid) with k attempts per layout, as in AMAGO-2."""
