"""Multi-game two-attempt Procgen env suite (AMAGO example 09); needs procgen-mirror, numpy<2 and old gym."""
