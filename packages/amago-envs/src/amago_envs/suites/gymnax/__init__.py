"""gymnax env suite: jax environments stepped as one already-vectorised batch (AMAGO example 02)."""
