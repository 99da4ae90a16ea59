"""Studies over many amago runs: ``amago run --seeds``, ``amago compare`` and ``amago sweep``, added to the
``amago`` command through amago-core's public hooks."""

STUDIES = "amago-studies"
"""This distribution, named in install hints for its extras (``pip install 'amago-studies[sweep]'``)."""
SEED_GROUP_RECORD = "seeds.json"
"""In a folder of seeds (``amago run --seeds``): the seeds, the command and each seed's exit code; its run
folders are ``seed_<k>/``."""
SWEEP_RECORD = "sweep.json"
"""In a sweep folder (``amago sweep``): the space, the objective and the study; its run folders are
``trial_<n>/``, one configuration each (not seeds of one)."""
