"""minGRU (Feng et al., "Were RNNs All We Needed?", 2024) as the ``mingru`` trajectory encoder.

``specs`` is torch-free (what ``amago list`` imports); ``encoder`` holds the network, imported when a run builds it.
"""
