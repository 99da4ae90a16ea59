"""Linear attention (Katharopoulos et al., ICML 2020) as the ``linear_attention`` trajectory encoder.

``specs.py`` is torch-free (what ``amago list`` imports); ``encoder.py`` holds the network.
"""
