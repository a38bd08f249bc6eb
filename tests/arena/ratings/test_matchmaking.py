"""The ladder's matchmaker (arena.ratings.matchmaking): the table rules as properties over
arbitrary pools, and the share guarantees over long simulated runs."""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import replace

import pytest
from helpers.bench_modules import bench_module
from helpers.paths import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.ratings.matchmaking import (
    Candidate,
    MatchmakingError,
    MatchmakingSettings,
    choose_table,
    choose_tables,
)

ELO = st.floats(min_value=800, max_value=2200, allow_nan=False)
SD = st.one_of(st.just(math.inf), st.floats(min_value=0, max_value=500, allow_nan=False))


@st.composite
def pools(draw: st.DrawFn, max_size: int = 30) -> list[Candidate]:
    size = draw(st.integers(min_value=0, max_value=max_size))
    owners = draw(st.integers(min_value=1, max_value=max(size, 1)))
    ids = draw(st.lists(st.integers(min_value=1, max_value=10**6), min_size=size, max_size=size, unique=True))
    return [
        Candidate(
            bot_id=bot,
            owner_id=draw(st.integers(min_value=1, max_value=owners)),
            elo=draw(ELO),
            sd=draw(SD),
            matches=draw(st.integers(min_value=0, max_value=200)),
            free=draw(st.integers(min_value=0, max_value=2)),
        )
        for bot in ids
    ]


SETTINGS = st.builds(
    MatchmakingSettings,
    placement_sd=st.floats(min_value=1, max_value=300),
    top_n=st.integers(min_value=1, max_value=12),
    top_weight=st.floats(min_value=0, max_value=1),
    allow_same_owner=st.booleans(),
    early_top_weight=st.floats(min_value=0, max_value=1),
    ordered_noise=st.floats(min_value=0, max_value=1),
    neighbours=st.integers(min_value=1, max_value=6),
    explore=st.integers(min_value=0, max_value=3),
)


def valid_table_exists(pool: list[Candidate], seats: int, same_owner: bool) -> bool:
    free = [c for c in pool if c.free > 0]
    return len(free) >= seats and (same_owner or len({c.owner_id for c in free}) >= seats)


@settings(max_examples=300, deadline=None)
@given(pool=pools(), seats=st.integers(min_value=2, max_value=6), seed=st.integers(0, 2**32), opts=SETTINGS)
def test_a_pick_is_a_valid_table_or_none_when_there_is_none(
    pool: list[Candidate], seats: int, seed: int, opts: MatchmakingSettings
) -> None:
    pick = choose_table(pool, seats, random.Random(seed), opts)
    if not valid_table_exists(pool, seats, opts.allow_same_owner):
        assert pick is None
        return
    assert pick is not None
    by_id = {c.bot_id: c for c in pool}
    assert len(pick.bot_ids) == seats
    assert len(set(pick.bot_ids)) == seats, "a bot seated twice"
    assert all(by_id[b].free > 0 for b in pick.bot_ids), "a bot without a free slot"
    if not opts.allow_same_owner:
        assert len({by_id[b].owner_id for b in pick.bot_ids}) == seats, "two bots of one owner"
    assert pick.reason and len(pick.reason) <= 80


@settings(max_examples=100, deadline=None)
@given(pool=pools(), seats=st.integers(min_value=2, max_value=4), seed=st.integers(0, 2**32))
def test_the_same_seed_gives_the_same_pick(pool: list[Candidate], seats: int, seed: int) -> None:
    assert choose_table(pool, seats, random.Random(seed)) == choose_table(pool, seats, random.Random(seed))


@settings(max_examples=200, deadline=None)
@given(
    pool=pools(),
    seats=st.integers(min_value=2, max_value=4),
    count=st.integers(min_value=0, max_value=12),
    seed=st.integers(0, 2**32),
    opts=SETTINGS,
)
def test_a_batch_of_tables_shares_out_each_bots_free_slots_the_same_for_a_seed(
    pool: list[Candidate], seats: int, count: int, seed: int, opts: MatchmakingSettings
) -> None:
    picks = choose_tables(pool, seats, random.Random(seed), count, opts)
    assert picks == choose_tables(list(pool), seats, random.Random(seed), count, opts), "not reproducible"
    assert len(picks) <= count
    by_id = {c.bot_id: c for c in pool}
    used = Counter(b for p in picks for b in p.bot_ids)
    assert all(used[b] <= by_id[b].free for b in used), "a bot at more tables than it has slots"
    for p in picks:
        assert len(set(p.bot_ids)) == seats
        if not opts.allow_same_owner:
            assert len({by_id[b].owner_id for b in p.bot_ids}) == seats
    if len(picks) < count:  # stopped early: no valid table is left in the slots that remain
        left = [replace(c, free=c.free - used[c.bot_id]) for c in pool]
        assert not valid_table_exists(left, seats, opts.allow_same_owner)


def board(size: int, seed: int = 1, matches: int = 40) -> list[Candidate]:
    rng = random.Random(seed)
    return [Candidate(i, i, 1500 + rng.gauss(0, 200), 40.0, matches) for i in range(size)]


def test_a_starving_bot_is_the_focal_one() -> None:
    pool = board(200)
    pool[57] = Candidate(57, 57, 1400.0, 20.0, matches=3)  # far below half the mean of ~40
    pick = choose_table(pool, 2, random.Random(0))
    assert pick is not None and pick.bot_ids[0] == 57 and pick.reason == "minimum share"


def test_a_newcomer_gets_placement_matches() -> None:
    pool = board(200)
    pool.append(Candidate(999, 999, 1500.0, math.inf, matches=0))
    pick = choose_table(pool, 4, random.Random(0))
    assert pick is not None and pick.bot_ids[0] == 999 and pick.reason == "placement"


def test_an_unresolved_top_gets_its_uncertain_pair() -> None:
    pool = board(100)
    top = sorted(pool, key=lambda c: -c.elo)
    pool = [Candidate(c.bot_id, c.owner_id, c.elo, 40.0 if c in top[8:12] else 2.0, 40) for c in pool]
    pick = choose_table(pool, 2, random.Random(0), MatchmakingSettings(top_weight=1.0))
    assert pick is not None and pick.reason.startswith("top 10: uncertain pair #")
    assert set(pick.bot_ids) <= {c.bot_id for c in top[8:12]}


def test_the_top_line_waits_for_an_ordered_board_unless_told_otherwise() -> None:
    """Before the whole board is ordered (its mean variance above ordered_noise x its spread's)
    the top line gets early_top_weight of the picks, after it top_weight."""
    rng = random.Random(2)
    elo = [1500 + rng.gauss(0, 200) for _ in range(100)]
    top = sorted(range(100), key=lambda i: -elo[i])

    def reasons(wide: float, opts: MatchmakingSettings) -> set[str]:
        # #9-#12 straddle the line at any sd; the rest are sure of their side only when narrow.
        pool = [Candidate(i, i, elo[i], 40.0 if i in top[8:12] else wide, 40) for i in range(100)]
        picks = choose_tables(pool, 2, random.Random(0), 20, opts)
        return {p.reason.split(":")[0] for p in picks}

    settings_ = MatchmakingSettings(top_weight=1.0, early_top_weight=0.0, ordered_noise=0.05)
    assert "top 10" not in reasons(90.0, settings_)  # mean variance ~0.2 x the spread's
    assert "top 10" in reasons(2.0, settings_)
    assert "top 10" in reasons(90.0, replace(settings_, early_top_weight=1.0))


def test_before_the_board_is_ordered_the_top_line_has_its_own_lower_cap() -> None:
    rng = random.Random(3)
    elo = [1500 + rng.gauss(0, 200) for _ in range(100)]
    top = sorted(range(100), key=lambda i: -elo[i])[8:12]  # they straddle the line
    # Only the four in doubt; they have played 2.4x the mean (42.4); ordered_noise 0: never ordered.
    pool = [Candidate(i, i, elo[i], 40.0 if i in top else 1.0, 100 if i in top else 40) for i in range(100)]

    def top_picks(early_max_share: float) -> int:
        opts = MatchmakingSettings(early_top_weight=1.0, early_max_share=early_max_share, ordered_noise=0.0)
        return sum(p.reason.startswith("top") for p in choose_tables(pool, 2, random.Random(0), 10, opts))

    assert top_picks(2.0) == 0
    assert top_picks(3.0) == 2  # a slot each: two tables of the four


@pytest.mark.parametrize("seats", [2, 3])
def test_a_top_line_table_seats_bots_in_doubt_on_both_sides_of_the_line(seats: int) -> None:
    pool = board(100)
    top = sorted(pool, key=lambda c: -c.elo)
    doubt = {c.bot_id for c in top[7:13]}
    pool = [replace(c, sd=30.0 if c.bot_id in doubt else 1.0) for c in pool]
    line = 0.5 * (top[9].elo + top[10].elo)
    picks = choose_tables(pool, seats, random.Random(4), len(doubt) // seats)  # a slot each
    assert len(picks) == len(doubt) // seats
    for pick in picks:
        assert pick.reason.startswith("top 10: uncertain pair #"), pick
        assert set(pick.bot_ids) <= doubt and len(set(pick.bot_ids)) == seats
        sides = {pool[b].elo > line for b in pick.bot_ids[:2]}
        assert sides == {True, False}, "the pair is across the line"


def simulate(seats: int, tables: int, opts: MatchmakingSettings) -> list[int]:
    """Play ``tables`` picks on a board that never learns (every sd stays 30): the top line
    stays unresolved, so a top-hungry setting keeps wanting the same few bots."""
    rng = random.Random(5)
    pool = [Candidate(i, i, 1500 + rng.gauss(0, 200), 30.0, 0) for i in range(60)]
    for _ in range(tables):
        pick = choose_table(pool, seats, rng, opts)
        assert pick is not None
        for b in pick.bot_ids:
            c = pool[b]
            pool[b] = Candidate(b, b, c.elo, c.sd, c.matches + 1)
    return [c.matches for c in pool]


TOP_HUNGRY = MatchmakingSettings(top_weight=1.0, top_z=10.0)


@pytest.mark.parametrize("seats", [2, 4])
def test_over_a_long_run_no_bot_exceeds_the_maximum_share_nor_falls_below_the_minimum(seats: int) -> None:
    counts = simulate(seats, 3000, TOP_HUNGRY)
    mean = sum(counts) / len(counts)
    assert max(counts) <= TOP_HUNGRY.max_share * mean
    assert min(counts) >= TOP_HUNGRY.min_share * mean - 1
    # The same run without the cap: the top takes far more, so the bound above is binding.
    uncapped = simulate(seats, 3000, MatchmakingSettings(top_weight=1.0, top_z=10.0, max_share=1000.0))
    assert max(uncapped) > 7 * mean


def test_bad_input_is_refused_with_the_value_quoted() -> None:
    with pytest.raises(MatchmakingError, match="nan"):
        Candidate(1, 1, math.nan, 10.0, 0)
    with pytest.raises(MatchmakingError, match=r"-1\.0"):
        Candidate(1, 1, 1500.0, -1.0, 0)
    with pytest.raises(MatchmakingError, match="'3'"):
        choose_table(board(5), "3", random.Random(0))  # type: ignore[arg-type]
    with pytest.raises(MatchmakingError, match="bot 2 is in the pool twice"):
        choose_table([*board(5), board(5)[2]], 2, random.Random(0))
    with pytest.raises(MatchmakingError, match=r"max_share=0\.5"):
        MatchmakingSettings(max_share=0.5)


def test_batches_with_spare_slots_keep_the_busiest_bot_within_the_cap() -> None:
    """choose_tables in batches, each bot with 3 free slots a batch (so the slots do not cap
    it first) on a board that never learns: the top-hungry rule wants the same few bots every
    pick, and max_share holds them to 5x the mean, never a bot twice at a table."""
    rng = random.Random(8)
    pool = [Candidate(i, i, 1500 + rng.gauss(0, 200), 30.0, 0, free=3) for i in range(60)]
    for _ in range(300):
        picks = choose_tables(pool, 3, rng, 6, TOP_HUNGRY)
        assert len(picks) == 6
        for pick in picks:
            assert len(set(pick.bot_ids)) == 3, "a bot twice at a table"
            for b in pick.bot_ids:
                pool[b] = replace(pool[b], matches=pool[b].matches + 1)
    counts = [c.matches for c in pool]
    mean = sum(counts) / len(counts)
    assert max(counts) <= TOP_HUNGRY.max_share * mean + 1  # + the table that crossed it
    assert max(counts) > 3 * mean, "the cap is what binds"


def test_a_seeded_ladder_simulation_gives_identical_results() -> None:
    """bench/ladder.py on a small pool: the same seed gives the same tables needed, shares and
    reasons (the docs' table is made this way), another seed other ones."""
    with bench_module(ROOT / "bench" / "ladder.py", "bench_ladder_determinism") as bench:

        def once(seed: int) -> tuple[object, ...]:
            true = bench.world(40, 200.0, seed)
            policy = bench.Matchmaker(MatchmakingSettings(), 3, random.Random(seed))
            result = bench.run(policy, true, 2, 3000, seed, 1.3)
            return (result.needed, result.tables, result.share_min, result.share_max, result.reasons)

        first = once(0)
        assert once(0) == first
        assert once(1) != first


def test_the_docs_table_is_spliced_between_its_markers_and_judged_per_goal() -> None:
    """bench/ladder_table.py replaces only what lies between the two markers (and refuses a
    file without exactly one pair), and a world misses exactly the goals its numbers miss."""
    with bench_module(ROOT / "bench" / "ladder_table.py", "bench_ladder_table") as table:
        text = f"head\n{table.BEGIN}\nold table\n{table.END}\ntail\n"
        assert table.splice(text, "new") == f"head\n{table.BEGIN}\nnew\n{table.END}\ntail\n"
        with pytest.raises(SystemExit, match="exactly one"):
            table.splice(text + table.END, "new")

        def runs(mm: list[int | None], share: float = 4.0) -> dict[str, object]:
            def one(needed: list[int | None], top: float = 1.0) -> object:
                return table.ladder.Run(needed, 100_000, 0.9, top, 0.1, 1.0, {})

            base = {"random": one([300, 300, 100]), "nearest": one([250, 200, 200])}
            return {"matchmaking": one(mm, share), **base}

        assert table.misses(runs([100, 100, 110])) == []
        assert table.misses(runs([101, 100, 111], share=5.01)) == ["(a) vs random", "(c)", "share"]
        assert table.misses(runs([None, 100, 100])) == ["(a) vs random", "(a) vs nearest"]
        assert table.tally([["(a) vs random: neither reached", "(c)"], ["(c)"], []], [1.2, 1.5]) == (
            "Missed: (a) vs random on 1 (1 undecided), (a) vs nearest on 0, (b) vs random on 0, "
            f"(b) vs nearest on 0, (c) on 2 (1.20{table.DASH}1.50{table.TIMES} random's tables), share on 0."
        )
