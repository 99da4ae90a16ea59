"""XLand-MiniGrid env suite: k episodes per ruleset, already vectorised in jax (AMAGO example 11)."""
