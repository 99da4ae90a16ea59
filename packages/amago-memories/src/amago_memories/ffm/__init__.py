"""Fast and Forgetful Memory (Morad et al., NeurIPS 2023) as the ``ffm`` trajectory encoder.

``specs`` holds the torch-free config and spec (what ``amago list`` imports); ``encoder`` the network.
"""
