"""``tonk play A B --duplicate`` and its statistics (sdk/compare.py): the seats swapped on the
same cards, the paired intervals, the verdict on house bots of known different strength."""

from __future__ import annotations

import importlib
import math
import re
import sys
from pathlib import Path

import pytest

from sdk import cli
from sdk.compare import Z95, compare_pairs, elo_estimate, elo_of_score, pair_score

# -- the statistics on fixed input ------------------------------------------------------------


def test_pair_score_is_the_mean_of_the_two_matches() -> None:
    assert pair_score((10, -4), (-10, 4)) == 0.5  # won one seat, lost the other
    assert pair_score((3, 0), (-3, 0)) == 0.75  # won one, drew one
    assert pair_score((-1, -2), (1, 2)) == 0.0


def test_elo_interval_on_fixed_counts() -> None:
    # 10 pairs: 2 lost, 3 split, 5 won, plus the pseudo-pair at 1/2 -> 11 scores.
    est = elo_estimate([2, 0, 3, 0, 5])
    assert est is not None
    scores = [0.5] + [0.0] * 2 + [0.5] * 3 + [1.0] * 5
    mean = sum(scores) / 11
    sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / 10)
    half = Z95 * sd / math.sqrt(11)
    assert est.pairs == 10
    assert est.elo == pytest.approx(-400 * math.log10(1 / mean - 1))
    assert est.low == pytest.approx(elo_of_score(mean - half))
    assert est.high == pytest.approx(elo_of_score(mean + half))
    assert est.low < 0 < est.elo < est.high  # 19/33 with this spread: not yet distinguishable
    assert elo_estimate([0, 0, 0, 0, 0]) is None


def test_every_pair_won_has_a_finite_interval_of_some_width() -> None:
    est = elo_estimate([0, 0, 0, 0, 20])
    assert est is not None
    assert 0 < est.low < est.elo < est.high < math.inf
    assert est.high == pytest.approx(elo_of_score(1 - 1 / 84))  # moved in by 1 / (4 (n + 1))


def test_chips_interval_is_paired_by_deal() -> None:
    # Per deal, A's chips minus B's per 100 hands: (8 - -8) * 100 / 20 = 80, then 40, then 0.
    cmp = compare_pairs([(5, 3), (6, -2), (0, 0)], [(-5, -3), (-6, 2), (0, 0)], hands=10)
    assert cmp.chips_per_100 == pytest.approx(40.0)
    assert cmp.chips_margin == pytest.approx(Z95 * 40.0 / math.sqrt(3))  # sd of 80, 40, 0 is 40
    assert cmp.counts == [0, 0, 2, 0, 1]  # deal 1: both won; deal 2: won 1, lost 1; deal 3: drawn
    assert cmp.verdict == "not distinguishable at 3 deals: play more"


def test_compare_refuses_unpaired_input() -> None:
    with pytest.raises(ValueError, match="same number"):
        compare_pairs([(1, 2)], [], hands=5)


# -- tonk play A B --duplicate ----------------------------------------------------------------

_SEATLOG = '''
from sdk.bot import Bot

LOG = []  # (match id, hand index, seat, its label, the hand dealt to it)
WITHHELD = []  # per hand end: whether the complete record was withheld


class SeatLogBot(Bot):
    name = "seatlog"

    def act(self, obs):
        entry = (self.match.match_id, obs.hand_index, obs.seat, obs.players[obs.seat])
        if all(logged[:4] != entry for logged in LOG):  # its first decision: the hand as dealt
            LOG.append((*entry, tuple(sorted(str(c) for c in obs.hand))))
        return 0

    def on_hand_end(self, result):
        WITHHELD.append(result.record_withheld and not result.record)
'''


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, source: str) -> None:
    """Make ``source`` importable as ``name`` for this test only."""
    (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def _verdict(out: str) -> str:
    match = re.search(r"^A - B = .* Elo \[.*\]: (.*)$", out, re.MULTILINE)
    assert match, out
    return match.group(1)


def test_duplicate_swaps_the_seats_on_the_same_cards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(tmp_path, monkeypatch, "seatlog", _SEATLOG)
    spec = "seatlog:SeatLogBot"
    argv = ["play", spec, spec, "--duplicate", "--deals", "3", "--hands", "4", "--seed", "7", "--quiet"]
    assert cli.main(argv) == 0
    module = importlib.import_module("seatlog")
    dealt = {(m, h, seat, label): hand for m, h, seat, label, hand in module.LOG}
    assert {m for m, *_ in dealt} == {"deal0", "deal1", "deal2"}
    assert {label for *_, label in dealt} == {"A:seatlog", "B:seatlog"}
    # Each seat of each hand is dealt the same cards whether A or B sits there.
    both = [(m, h, s) for m, h, s, label in dealt if label == "A:seatlog" and (m, h, s, "B:seatlog") in dealt]
    assert len(both) >= 12, dealt  # of 3 deals x 4 hands x 2 seats (a hand can end before a seat acts)
    for m, h, seat in both:
        assert dealt[(m, h, seat, "A:seatlog")] == dealt[(m, h, seat, "B:seatlog")], (m, h, seat)
    assert len(set(dealt.values())) > 6  # and the hands differ from each other
    # Neither rotation reveals the other seat's cards: the records stay withheld.
    assert module.WITHHELD and all(module.WITHHELD)
    assert "A = seatlog:SeatLogBot, B = seatlog:SeatLogBot" in capsys.readouterr().out


def _duplicate(a: str, b: str, deals: int) -> int:
    return cli.main(["play", a, b, "--duplicate", "--deals", str(deals), "--seed", "1", "--quiet"])


def test_greedy_is_better_than_random(capsys: pytest.CaptureFixture[str]) -> None:
    assert _duplicate("greedy", "random", 20) == 0
    out = capsys.readouterr().out
    assert _verdict(out) == "A is better"
    assert re.search(r"^chips/100 hands: A - B = \+\d+\.\d \+/- \d+\.\d \(95%, paired by deal\)$", out, re.M)
    assert _duplicate("random", "greedy", 20) == 0
    assert _verdict(capsys.readouterr().out) == "B is better"


def test_greedy_against_itself_is_not_distinguishable(capsys: pytest.CaptureFixture[str]) -> None:
    assert _duplicate("greedy", "greedy", 10) == 0
    assert _verdict(capsys.readouterr().out) == "not distinguishable at 10 deals: play more"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["greedy", "random", "random", "--duplicate"], "--duplicate compares 2 bots (A B), got 3"),
        (["greedy", "random", "--duplicate", "--deals", "0"],
         "--hands and --deals must be at least 1, got 20 and 0"),
        (["greedy", "random", "--deals", "5"], "--deals counts duplicate pairs: add --duplicate"),
        (["greedy", "nosuchbot", "--duplicate"], "'nosuchbot' is not a house bot"),
    ],
)
def test_duplicate_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["play", *argv, "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert message in err and out == ""


_CRASHY = '''
from sdk.bot import Bot


class CrashyBot(Bot):
    name = "crashy"

    def act(self, obs):
        if self.match.seat == 1:  # only in the second seat: the first rotation of deal 0 is clean
            raise RuntimeError("no idea")
        return 0
'''


def test_a_fault_stops_the_comparison_without_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _module(tmp_path, monkeypatch, "crashy", _CRASHY)
    assert cli.main(["play", "crashy:CrashyBot", "greedy", "--duplicate", "--deals", "3", "--quiet"]) == 1
    out, err = capsys.readouterr()
    assert "Elo" not in out and "chips/100" not in out, out
    assert "deal 0: A:crashy crash in hand 0: RuntimeError: no idea" in err, err
    assert "no comparison from 0 complete deals" in err and "Traceback" in err
