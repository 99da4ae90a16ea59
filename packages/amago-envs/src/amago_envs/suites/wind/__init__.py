"""The ``wind`` env suite: a 2-D point pushed by a hidden wind, k attempts per trial to reach a goal (meta-RL)."""
