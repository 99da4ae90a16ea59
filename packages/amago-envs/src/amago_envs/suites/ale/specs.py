"""Spec and config of the ``ale`` env suite (imports neither torch, gymnasium nor ale-py).

Env ids: ``ale-<Game>`` with the game as gymnasium's ``ALE/<Game>-v5`` spells it (``ale-Pong``,
``ale-MsPacman``), or ``ale-multigame`` (default): the games of ``games`` (AMAGO's ten by default), actors
pinned to them round-robin (``game_assignment``). Every game uses the full 18-action set so that they share
one action space, and logs go under the game's name.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from amago_core.config.component import EnvSuiteConfig
from amago_core.plugins.spec import ComponentSpec
from amago_core.suggest import did_you_mean
from amago_envs.suites.specs import ENV_SUITES_GROUP, check_task

ALE_GAMES: tuple[str, ...] = (
    "Adventure", "AirRaid", "Alien", "Amidar", "Assault", "Asterix", "Asteroids", "Atlantis", "Atlantis2",
    "Backgammon", "BankHeist", "BasicMath", "BattleZone", "BeamRider", "Berzerk", "Blackjack", "Bowling",
    "Boxing", "Breakout", "Carnival", "Casino", "Centipede", "ChopperCommand", "CrazyClimber", "Crossbow",
    "Darkchambers", "Defender", "DemonAttack", "DonkeyKong", "DoubleDunk", "Earthworld", "ElevatorAction",
    "Enduro", "Entombed", "Et", "FishingDerby", "FlagCapture", "Freeway", "Frogger", "Frostbite", "Galaxian",
    "Gopher", "Gravitar", "Hangman", "HauntedHouse", "Hero", "HumanCannonball", "IceHockey", "Jamesbond",
    "JourneyEscape", "Kaboom", "Kangaroo", "KeystoneKapers", "KingKong", "Klax", "Koolaid", "Krull",
    "KungFuMaster", "LaserGates", "LostLuggage", "MarioBros", "MiniatureGolf", "MontezumaRevenge", "MrDo",
    "MsPacman", "NameThisGame", "Othello", "Pacman", "Phoenix", "Pitfall", "Pitfall2", "Pong", "Pooyan",
    "PrivateEye", "Qbert", "Riverraid", "RoadRunner", "Robotank", "Seaquest", "SirLancelot", "Skiing",
    "Solaris", "SpaceInvaders", "SpaceWar", "StarGunner", "Superman", "Surround", "Tennis", "Tetris",
    "TicTacToe3D", "TimePilot", "Trondead", "Turmoil", "Tutankham", "UpNDown", "Venture", "VideoCheckers",
    "VideoChess", "VideoCube", "VideoPinball", "WizardOfWor", "WordZapper", "YarsRevenge", "Zaxxon",
)  # fmt: skip
"""The games ale-py 0.10+ ships ROMs for (as in ``ALE/<Game>-v5``)."""

AMAGO_GAMES: tuple[str, ...] = (
    "Pong", "Boxing", "Breakout", "Gopher", "MsPacman", "ChopperCommand", "CrazyClimber", "BattleZone",
    "Qbert", "Seaquest",
)  # fmt: skip
"""AMAGO's multi-game Atari example's default games."""

MULTIGAME = "multigame"
ALE_TASKS: tuple[str, ...] = (MULTIGAME, *ALE_GAMES)


class ALEConfig(EnvSuiteConfig):
    """Atari 2600 through ale-py, with AMAGO's defaults (colour, unclipped rewards, sticky actions)."""

    kind: Literal["ale"] = "ale"
    """Registered name of this env suite."""

    games: list[str] = Field(default_factory=lambda: list(AMAGO_GAMES))
    """``ale-multigame``: the games played (see ``game_assignment``). Ignored for ``ale-<Game>``."""

    game_assignment: Literal["round_robin", "random"] = "round_robin"
    """``ale-multigame``: ``round_robin`` pins actor i to ``games[i % len(games)]`` for every episode, as AMAGO's
    example 08 does, so every game always gets its share of the data (episode lengths differ widely between
    games); the actor count (``rollout.parallel_actors``, with Ray ``ray.actors x ray.envs_per_actor``) must be
    a multiple of ``len(games)``. ``random``: every actor draws a game per episode."""

    resolution: tuple[int, int] = (84, 84)
    """Height and width frames are resized to."""

    grayscale: bool = False
    """One luminance channel instead of RGB."""

    channels_last: bool = False
    """Frames as (H, W, C); False gives (C, H, W), what ``tstep_encoder=cnn`` with channels_first expects."""

    frame_skip: int = Field(4, ge=1)
    """Emulator frames per action; the observation is the max of the last two (removes sprite flicker)."""

    sticky_action_prob: float = Field(0.25, ge=0.0, le=1.0)
    """Chance per frame that the emulator repeats the previous action (Machado et al., 2018)."""

    time_limit_frames: int = Field(108_000, ge=1)
    """Emulator frames per episode (108k = 30 minutes of play at 60 Hz)."""

    terminal_on_life_loss: bool = False
    """End the episode at every lost life."""

    action_space: Literal["discrete", "multibinary", "continuous"] = "discrete"
    """``discrete``: the 18 joystick/fire combinations; ``multibinary``: 5 buttons (up, down, left, right,
    fire) mapped onto them; ``continuous``: ale-py's (radius, angle, fire) joystick."""

    continuous_action_threshold: float = Field(0.5, ge=0.0, le=1.0)
    """Continuous mode: how far the stick must move before ale-py registers a direction."""

    clip_rewards: bool = False
    """Sign-clip rewards; AMAGO trains on unclipped rewards (scaled by ``agent.reward_multiplier``)."""

    @field_validator("task")
    @classmethod
    def _known_task(cls, task: str | None) -> str | None:
        return check_task("ale", task, ALE_TASKS)

    @field_validator("games")
    @classmethod
    def _known_games(cls, games: list[str]) -> list[str]:
        if not games:
            msg = "games is empty; list at least one game (see `amago list envs ale`)."
            raise ValueError(msg)
        for game in games:
            if game not in ALE_GAMES:
                msg = (
                    f"unknown Atari game {game!r}.{did_you_mean(game, ALE_GAMES)} See `amago list envs ale`."
                )
                raise ValueError(msg)
        return games

    def smoke_options(self) -> dict[str, Any]:
        """``--smoke`` runs 2 actors: pinned round-robin, they play the first 2 games (a count that divides)."""
        if self.task in (None, MULTIGAME) and self.game_assignment == "round_robin" and len(self.games) > 2:
            return {"games": self.games[:2]}
        return {}


# Example 08 (multi-game Atari): an 80-step context over trajectories saved 3x that long, rewards x0.25 (they
# are not clipped), no offline loss for the single-task agent, an IMPALA CNN on channels-first colour frames
# with DrQ augmentation, 5-frame skip, and 30 minutes of game time (21,600 steps) per evaluation. Multi-game:
# one actor per default game (actors are pinned to games round-robin, so their count is a multiple of it).
_ALE_SEQ = 80
ALE_PRESETS: dict[str, Any] = {
    "*": {
        "env": {"frame_skip": 5},
        "run": {"max_seq_len": _ALE_SEQ},
        "replay": {"traj_save_len": 3 * _ALE_SEQ, "save_trajs_as": "npz-compressed"},
        "schedule": {"val_timesteps_per_epoch": 21_600},
        "tstep_encoder": {
            "kind": "cnn",
            "cnn_type": "impala",
            "channels_first": True,
            "drqv2_aug": True,
        },
        "agent": {"kind": "agent", "reward_multiplier": 0.25, "offline_coeff": 0.0},
    },
    MULTIGAME: {"rollout": {"parallel_actors": len(AMAGO_GAMES)}},
}

ALE = ComponentSpec(
    name="ale",
    group=ENV_SUITES_GROUP,
    summary="Atari (ale-py, ROMs included): ale-<Game> or ale-multigame, unclipped rewards, per-game logs.",
    config=ALEConfig,
    factory="amago_envs.suites.ale.suite:ALESuite",
    requires=("ale_py", "cv2"),
    install_hint='pip install "amago-envs[ale]"',
    tasks=list(ALE_TASKS),
    default_task=MULTIGAME,
    presets=ALE_PRESETS,
)
