"""GTrXL (Parisotto et al., ICML 2020) as the ``gtrxl`` trajectory encoder.

``specs.py`` is torch-free (what ``amago list`` imports); ``encoder.py`` holds the network.
"""
