"""The continuous ladder: a tournament of kind ``ladder`` that never finishes by itself.

- ``settings``: what a ladder is (its pool, table size, hands, versions per owner, how many
  matches it keeps queued, the matchmaking settings), stored in ``tournaments.params``;
- ``setup``: create one (a ``tournaments`` row; its tables come later);
- ``lease``: one scheduler at a time per ladder, across processes and machines;
- ``scheduler``: :func:`~arena.ladder.scheduler.tick`, which tops the ladder up with tables
  the matchmaker (arena/ratings/matchmaking.py) picks, each one deal played in duplicate;
- ``status``: what the ``tonk ladder status`` command, the API and the ladder page show.

The loop that calls ``tick`` and hands the matches to workers is arena/runtime/ladder.py.
"""
