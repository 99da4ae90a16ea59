"""``StatefulPolicy`` around a scripted agent: the inputs it builds and the env actions it returns."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from amago_tools.policy import PolicySpaces, StatefulPolicy


class ScriptedAgent:
    """Plays back fixed actions, records every input, and counts steps per env in its memory."""

    def __init__(self, actions):
        self.actions = [torch.as_tensor(a) for a in actions]
        self.inputs = []

    def eval(self):
        return self

    def init_hidden_state(self, batch_size, device):
        return torch.zeros(batch_size, dtype=torch.long)

    def reset_hidden_state(self, hidden_state, dones):
        return hidden_state.masked_fill(torch.as_tensor(dones), 0)

    def get_actions(self, obs, rl2s, time_idxs, hidden_state=None, sample=True):
        self.inputs.append({"obs": obs, "rl2": rl2s[:, 0].clone(), "time": time_idxs[:, 0, 0].clone()})
        return self.actions[len(self.inputs) - 1], hidden_state + 1


def spaces_for(env_obs, env_action, agent_action, action_dim):
    return PolicySpaces(
        obs_space=gym.spaces.Dict({"observation": env_obs}),
        rl2_space=gym.spaces.Box(-np.inf, np.inf, (1 + action_dim,), np.float32),
        action_space=agent_action,
        env_observation_space=env_obs,
        env_action_space=env_action,
    )


OBS = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)


def test_discrete_actions_carry_the_env_start_and_come_back_one_hot():
    # (n_envs=2, L=1, 1) indices, as the agents return them.
    agent = ScriptedAgent([[[[2]], [[0]]], [[[1]], [[1]]], [[[0]], [[2]]]])
    policy = StatefulPolicy(
        agent, spaces_for(OBS, gym.spaces.Discrete(3, start=5), gym.spaces.Discrete(3), 3)
    )
    policy.reset(2)
    obs = np.zeros((2, 2), dtype=np.float32)
    assert policy.act(obs).tolist() == [7, 5]
    assert policy.act(obs, reward=[1.5, -1.0]).tolist() == [6, 6]
    assert policy.act(obs, reward=[0.5, 2.0], done=[True, False]).tolist() == [5, 7]
    first, second, third = agent.inputs
    assert first["rl2"].tolist() == [[0, 0, 0, 0], [0, 0, 0, 0]]
    assert first["time"].tolist() == [0, 0]
    assert second["rl2"].tolist() == [[1.5, 0, 0, 1], [-1.0, 1, 0, 0]]
    assert second["time"].tolist() == [1, 1]
    # Env 0 began a new episode: no previous action or reward, time 0, memory restarted.
    assert third["rl2"].tolist() == [[0, 0, 0, 0], [2.0, 0, 1, 0]]
    assert third["time"].tolist() == [0, 2]
    assert policy.memory.tolist() == [1, 3]


def test_box_actions_are_rescaled_to_the_env_bounds_and_kept_in_minus_one_one():
    low, high = np.array([0.0, -10.0], dtype=np.float32), np.array([2.0, 10.0], dtype=np.float32)
    env_action = gym.spaces.Box(low, high, dtype=np.float32)
    agent = ScriptedAgent([[[[-1.0, 1.0]]], [[[0.0, 0.5]]]])
    policy = StatefulPolicy(agent, spaces_for(OBS, env_action, gym.spaces.Box(-1.0, 1.0, (2,)), 2))
    policy.reset()  # one env: no batch dim on observations or actions
    np.testing.assert_allclose(policy.act(np.zeros(2, dtype=np.float32)), [0.0, 10.0])
    np.testing.assert_allclose(policy.act(np.zeros(2, dtype=np.float32), reward=3.0), [1.0, 5.0])
    assert agent.inputs[1]["rl2"].tolist() == [[3.0, -1.0, 1.0]]


def test_a_single_discrete_env_gets_a_plain_int():
    agent = ScriptedAgent([[[[1]]]])
    policy = StatefulPolicy(agent, spaces_for(OBS, gym.spaces.Discrete(2), gym.spaces.Discrete(2), 2))
    policy.reset()
    action = policy.act(np.zeros(2, dtype=np.float32))
    assert action == 1
    assert isinstance(action, int)


def test_reset_needs_at_least_one_env():
    policy = StatefulPolicy(
        ScriptedAgent([]), spaces_for(OBS, gym.spaces.Discrete(2), gym.spaces.Discrete(2), 2)
    )
    with pytest.raises(ValueError, match="n_envs must be at least 1"):
        policy.reset(0)
