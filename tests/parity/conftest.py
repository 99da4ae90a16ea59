"""The parity tests' helper module (``parity_cases``, shared with ``bench/parity_vs_amago.py``) on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
