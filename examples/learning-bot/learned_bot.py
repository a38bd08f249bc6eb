"""The bot that plays the policy train.py learned: the same action numbers as the environment
(sdk/action_index.py), so the policy needs no translation. Upload this folder with its
policy.json: ``tonk submit learned --upload .`` (tonk.toml names the entry)."""

from __future__ import annotations

import json
from pathlib import Path

from sdk.action_index import action_mask, legal_action
from sdk.actions import Action
from sdk.bot import Bot
from sdk.observation import Observation

POLICY = Path(__file__).with_name("policy.json")


class LearnedBot(Bot):
    name = "learned"
    author = "a PettingZoo example"

    def __init__(self) -> None:
        super().__init__()
        self.policy: dict[str, list[float]] = json.loads(POLICY.read_text())

    def act(self, obs: Observation) -> Action:
        preferences = self.policy["start" if obs.phase == "start" else "play"]
        mask = action_mask(obs.legal_actions)
        best = max((i for i, ok in enumerate(mask) if ok), key=lambda i: (preferences[i], -i))
        return legal_action(obs, best)
