"""Tonk as a PettingZoo AEC environment, for authors who train bots (as RLCard, OpenSpiel and
PettingZoo's classic card games offer theirs). Install the extra: ``pip install
'tonk-arena[rl]'`` (PettingZoo, Gymnasium, NumPy); the rest of the SDK never imports this.

::

    from sdk.tonk_env import env

    game = env(players=2)
    game.reset(seed=7)
    for agent in game.agent_iter():
        observation, reward, termination, truncation, info = game.last()
        mask = observation["action_mask"]
        action = None if termination or truncation else int(mask.nonzero()[0][0])
        game.step(action)

One episode is one hand, dealt from ``seed`` exactly as the referee deals a match's first
hand (docs/dealing.md), with the same engine and rules (sdk/engine.py, docs/rules.md). The
agents are ``player_0`` … ``player_{n-1}`` (seat order); the agent to act is the seat whose
turn it is (a seat that drew goes on to meld, lay off and discard). Each agent observes only
what its seat sees: ``{"observation": ..., "action_mask": ...}``, the seat's view as numbers
(sdk/action_index.encode_observation) and a 0/1 mask over the :data:`~sdk.action_index.SIZE`
action numbers (sdk/action_index.py). At the hand's end every agent is rewarded its seat's
payoff in stakes (they sum to zero) and terminated.

A policy trained here plays in the arena unchanged: in a bot's ``act``, number the view with
``encode_observation(obs)``, mask with ``action_mask(obs.legal_actions)``, and turn the chosen
number back into the action with ``legal_action(obs, number)`` (docs/bot-author-guide.md,
"Training a bot").
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from sdk.action_index import FEATURES, SIZE, action_mask, encode_observation, legal_action
from sdk.engine import HandState
from sdk.observation import observe
from sdk.rules import STANDARD, Rules


def env(players: int = 2, rules: Rules = STANDARD, render_mode: str | None = None) -> AECEnv:
    """The environment wrapped as PettingZoo's classic games are: an illegal action ends the
    hand with a penalty for the agent that took it, and the API's order is enforced."""
    game: AECEnv = raw_env(players=players, rules=rules, render_mode=render_mode)
    game = wrappers.TerminateIllegalWrapper(game, illegal_reward=-1)
    game = wrappers.AssertOutOfBoundsWrapper(game)
    return wrappers.OrderEnforcingWrapper(game)


RENDER_MODES = ("human", "ansi")


class raw_env(AECEnv):  # type: ignore[misc]  # noqa: N801 - PettingZoo's name for the unwrapped one
    metadata = {"render_modes": list(RENDER_MODES), "name": "tonk_v0", "is_parallelizable": False}

    def __init__(self, players: int = 2, rules: Rules = STANDARD, render_mode: str | None = None):
        super().__init__()
        if type(players) is not int or not 2 <= players <= 5:
            raise ValueError(f"a Tonk table seats 2 to 5 players, got {players!r}")
        if render_mode is not None and render_mode not in RENDER_MODES:
            raise ValueError(f"render_mode is one of {RENDER_MODES}, got {render_mode!r}")
        self.rules = rules
        self.render_mode = render_mode
        self.possible_agents = [f"player_{i}" for i in range(players)]
        self.agents = list(self.possible_agents)
        self._seat = {agent: i for i, agent in enumerate(self.possible_agents)}
        view = spaces.Box(low=0.0, high=1.0, shape=(FEATURES,), dtype=np.float32)
        mask = spaces.Box(low=0, high=1, shape=(SIZE,), dtype=np.int8)
        self.observation_spaces = {a: spaces.Dict({"observation": view, "action_mask": mask})
                                   for a in self.possible_agents}  # fmt: skip
        self.action_spaces = {a: spaces.Discrete(SIZE) for a in self.possible_agents}
        self.state: HandState | None = None
        self._rng = random.Random()

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._rng.seed(seed)
        # The hand's own seed, drawn from the episode's: a fixed seed replays the same hands.
        deal_seed = self._rng.getrandbits(63)
        players = len(self.possible_agents)
        self.state = HandState.from_seed(deal_seed, players, rules=self.rules)
        self.deal_seed = deal_seed
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._settle_if_over()  # a TONK at the deal ends the hand before anyone acts
        self._accumulate_rewards()
        self.agent_selection = self.possible_agents[self.state.to_act]

    def observe(self, agent: str) -> dict[str, Any]:
        assert self.state is not None, "reset() first"
        seen = observe(self.state, self._seat[agent])
        return {
            "observation": np.asarray(encode_observation(seen), dtype=np.float32),
            "action_mask": np.asarray(action_mask(seen.legal_actions), dtype=np.int8),
        }

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        assert self.state is not None and action is not None
        seat = self._seat[agent]
        chosen = legal_action(observe(self.state, seat), int(action))
        self.state.apply(chosen, seat)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {a: 0.0 for a in self.agents}
        self._settle_if_over()
        if not self.state.is_over:
            self.agent_selection = self.possible_agents[self.state.to_act]
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _settle_if_over(self) -> None:
        assert self.state is not None
        if self.state.outcome is None:
            return
        for agent, payoff in zip(self.agents, self.state.outcome.payoffs, strict=True):
            self.rewards[agent] = float(payoff)
            self.terminations[agent] = True
            self.infos[agent] = {"outcome": self.state.outcome.to_json()}

    def render(self) -> str | None:
        if self.state is None:
            return None
        text = str(self.state)
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        self.state = None
