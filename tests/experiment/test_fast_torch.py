"""A run that never compiles never imports torch's compiler (~1.5 s a process), and its AdamW is torch's."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from amago_core.experiment.fast_torch import untraced_adamw


def test_the_untraced_adamw_updates_exactly_like_torchs():
    torch.manual_seed(0)
    start = [torch.randn(5, 3), torch.randn(3)]
    ours = [torch.nn.Parameter(t.clone()) for t in start]
    theirs = [torch.nn.Parameter(t.clone()) for t in start]
    opt_ours = untraced_adamw(ours, lr=1e-2, weight_decay=1e-3)
    opt_theirs = torch.optim.AdamW(theirs, lr=1e-2, weight_decay=1e-3)
    for step in range(5):
        for params, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            ((params[0] * (step + 1)).sum() ** 2 + params[1].pow(3).sum()).backward()
            opt.step()
    for a, b in zip(ours, theirs, strict=True):
        assert torch.equal(a, b)
    assert torch.equal(
        opt_ours.state_dict()["state"][0]["exp_avg"], opt_theirs.state_dict()["state"][0]["exp_avg"]
    )


@pytest.mark.slow
def test_a_training_run_never_imports_torch_dynamo(tiny_job, tmp_path):
    import json

    job = tmp_path / "job.json"
    job.write_text(json.dumps(tiny_job))
    code = (
        "import sys\n"
        "from amago_core.config.sources import load_config\n"
        "from amago import Experiment\n"
        "import json\n"
        f"job = json.load(open({str(job)!r}))\n"
        "e = Experiment(load_config(base=job, environ={}), epochs=2)\n"
        "e.start(); e.learn(); e.close()\n"
        "assert e.grad_update_counter > 0\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "False"
