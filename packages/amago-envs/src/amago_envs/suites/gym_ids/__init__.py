"""The ``gym`` env suite: any registered gymnasium id (dm_control through shimmy) as ``gym-<id>``."""
