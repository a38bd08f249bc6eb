"""``random``: picks uniformly among the legal actions, from the bot's seeded ``rng``.

The floor every other bot should beat. Deterministic for a given match id and seat.

    tonk serve bots.random_bot:RandomBot --port 50051
"""

from __future__ import annotations

from sdk.actions import Action
from sdk.bot import Bot
from sdk.observation import Observation


class RandomBot(Bot):
    name = "random"
    version = "1.0.0"
    author = "Tonk Arena house bots"
    max_concurrent_matches = 64  # a few microseconds a decision

    def act(self, obs: Observation) -> Action | int:
        return self.rng.randrange(len(obs.legal_actions))
