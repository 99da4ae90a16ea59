"""Symbolic DM Alchemy env suite (AMAGO example 06); needs dm_alchemy, which is installed from git."""
