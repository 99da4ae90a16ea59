"""The Linear Recurrent Unit (Orvieto et al., ICML 2023) as the ``lru`` trajectory encoder.

``specs`` holds the torch-free config and spec (what ``amago list`` imports); ``encoder`` the network.
"""
