"""mLSTM, xLSTM's matrix memory (Beck et al., NeurIPS 2024), as the ``mlstm`` trajectory encoder.

``specs`` is torch-free (what ``amago list`` imports); ``encoder`` holds the network, imported when a run builds it.
"""
