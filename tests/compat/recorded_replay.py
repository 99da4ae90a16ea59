"""Replays recorded inputs through an agent: what the AMAGO-made and the amago-made golden checkpoints are held to.

One computation for ``test_import_amago.py``, ``test_golden_checkpoints.py`` and ``bench/make_golden_checkpoint.py``
(which records what the golden test later compares).
"""

from __future__ import annotations

import numpy as np
import torch


def replay(agent: torch.nn.Module, figures: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per step of ``figures`` (``obs``, ``rl2``, ``time``, ``reset``; steps x envs), with the hidden state reset
    where ``reset`` says: the argmax ``action`` of the last gamma (steps x envs), the actor's ``probs``, the
    critics' ``q`` and the denormalised critic ``value``."""
    hidden = agent.init_hidden_state(figures["obs"].shape[1], "cpu")
    out: dict[str, list[np.ndarray]] = {"action": [], "probs": [], "q": [], "value": []}
    with torch.no_grad():
        for step in range(figures["obs"].shape[0]):
            if figures["reset"][step].any():
                hidden = agent.reset_hidden_state(hidden, figures["reset"][step])
            obs = {"observation": torch.from_numpy(figures["obs"][step]).unsqueeze(1)}
            rl2 = torch.from_numpy(figures["rl2"][step]).unsqueeze(1)
            time = torch.from_numpy(figures["time"][step]).unsqueeze(1)
            states, hidden = agent.get_state_embedding(obs, rl2, time, hidden)
            probs = agent.actor(states).probs  # (N, 1, G, A)
            q = agent.critics(states, probs.unsqueeze(0))  # (1, N, 1, C, G, 1)
            out["action"].append(probs[:, 0, -1].argmax(-1).numpy())
            out["probs"].append(probs[:, 0].numpy())
            out["q"].append(q[0, :, 0, ..., 0].numpy())
            out["value"].append(agent.popart(q, normalized=False)[0, :, 0, ..., 0].numpy())
    return {key: np.stack(value) for key, value in out.items()}
