"""Optional libraries, imported only where they are used.

``pip install amago-core`` gives the spec API, the CLI and the experiment loop; each feature distribution
(amago-tools, amago-studies...) names its own extras (``amago-tools[plot]``), and the ``amago`` meta-package
installs them. Code that needs one calls :func:`require`, which names the extra to install in one line when it
is missing.
"""

from __future__ import annotations

import importlib
from types import ModuleType


class MissingOptionalDependencyError(ModuleNotFoundError):
    """An optional library is not installed; the message names the feature and the install command."""


def require(module: str, extra: str, what: str, distribution: str = "amago-core") -> ModuleType:
    """Imports ``module``, or says which extra (of ``distribution``) brings it.

    Args:
        module: the import name, e.g. ``"matplotlib.pyplot"`` (its top-level package is what gets installed).
        extra: the extra that installs it, e.g. ``"plot"``.
        what: the feature that needs it, as a user knows it (``"amago plot"``, ``"logging.log_to_wandb"``).
        distribution: the distribution whose extra it is (``"amago-tools"``).

    Returns:
        The imported module.

    Raises:
        MissingOptionalDependencyError: ``module``'s package is not installed; one line:
            ``<what> needs <package>: pip install '<distribution>[<extra>]'``. An installed library that fails
            to import for another reason raises its own error instead.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        package = module.split(".")[0]
        if exc.name is None or exc.name.split(".")[0] != package:
            raise  # the library is there but something it imports is not: its own message says what
        msg = f"{what} needs {package}: pip install '{distribution}[{extra}]'"
        raise MissingOptionalDependencyError(msg, name=package) from exc
