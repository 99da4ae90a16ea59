"""The ``metaworld`` env suite: Meta-World ML1/ML10/ML25/ML45 and MT1/MT10/MT25/MT50 as k-shot meta-RL."""
