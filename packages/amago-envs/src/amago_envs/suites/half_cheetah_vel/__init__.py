"""The ``half_cheetah_vel`` env suite: HalfCheetah running at a target velocity the agent must infer."""
