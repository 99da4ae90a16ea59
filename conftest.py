"""Settings of the whole test suite (tests/ and plugins-examples/), read before any test module.

``optim.mixed_precision=auto`` resolves per machine: fp32 without native bf16, and on a CPU with avx512_bf16/AMX
or a GPU it times both precisions at start. A test that is not about precision must not depend on either, so the
suite pins `auto` to fp32 for every run it starts, in this process and in the processes it launches (the
variable is inherited). The tests about `auto` (tests/experiment/test_precision.py, tests/precision/) unset it
and fake the CPU's flags and the timings; the tests about bf16 ask for it explicitly.
"""

from __future__ import annotations

import os

from amago_core.experiment.hardware import AUTO_VARIABLE

os.environ[AUTO_VARIABLE] = "no"
