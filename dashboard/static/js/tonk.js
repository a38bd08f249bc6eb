/* Tonk hand replay logic: rebuilds a tonk-hand/1 record step by step and describes each
 * step in plain words. No DOM here, so it also runs under Node (tests). */
(function (root) {
  "use strict";

  var RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
  var SUITS = "cdhs";
  var SYMBOL = { c: "\u2663", d: "\u2666", h: "\u2665", s: "\u2660" };
  var SUIT_NAME = { c: "clubs", d: "diamonds", h: "hearts", s: "spades" };
  var RANK_NAME = { 1: "aces", 11: "jacks", 12: "queens", 13: "kings" };

  function parseCard(text) {
    var t = String(text).trim();
    var suit = t.slice(-1).toLowerCase();
    var r = t.slice(0, -1).toUpperCase();
    if (r === "T") r = "10";
    var rank = RANKS.indexOf(r) + 1;
    if (rank < 1 || SUITS.indexOf(suit) < 0) throw new Error("unknown card " + text);
    return { text: RANKS[rank - 1] + suit, rank: rank, suit: suit, value: Math.min(rank, 10), red: suit === "d" || suit === "h" };
  }

  function label(text) { var c = parseCard(text); return RANKS[c.rank - 1] + SYMBOL[c.suit]; }
  function labels(cards) { return cards.map(label).join(" "); }
  function total(cards) { return cards.reduce(function (s, t) { return s + parseCard(t).value; }, 0); }
  function suitIndex(text) { return SUITS.indexOf(parseCard(text).suit); }
  function canonical(text) { return parseCard(text).text; }

  function rulesOf(record) {
    var r = record.rules;
    var opts = { stock_reshuffle: false, ace_high_or_low: false };
    if (r && typeof r === "object") {
      for (var k in r) if (Object.prototype.hasOwnProperty.call(r, k)) opts[k] = r[k];
    }
    return opts;
  }

  /* A meld as the engine keeps it: books by suit, spreads low to high (ace high if it must). */
  function makeMeld(owner, cards, rules) {
    var parsed = cards.map(parseCard);
    var book = parsed.every(function (c) { return c.rank === parsed[0].rank; });
    if (book) {
      var sorted = cards.map(canonical).sort(function (a, b) { return suitIndex(a) - suitIndex(b); });
      return { owner: owner, kind: "book", cards: sorted, lo: 0, hi: 0 };
    }
    var ranks = parsed.map(function (c) { return c.rank; }).sort(function (a, b) { return a - b; });
    var consecutive = ranks.every(function (r, i) { return r === ranks[0] + i; });
    var high = function (c) { return c.rank === 1 && !consecutive && rules.ace_high_or_low ? 14 : c.rank; };
    var ordered = parsed.slice().sort(function (a, b) { return high(a) - high(b); });
    return {
      owner: owner, kind: "spread", cards: ordered.map(function (c) { return c.text; }),
      lo: high(ordered[0]), hi: high(ordered[ordered.length - 1])
    };
  }

  function extend(meld, text) {
    var c = parseCard(text);
    if (meld.kind === "book") {
      var cards = meld.cards.concat([c.text]).sort(function (a, b) { return suitIndex(a) - suitIndex(b); });
      return { owner: meld.owner, kind: "book", cards: cards, lo: 0, hi: 0 };
    }
    if (c.rank === meld.lo - 1) {
      return { owner: meld.owner, kind: "spread", cards: [c.text].concat(meld.cards), lo: meld.lo - 1, hi: meld.hi };
    }
    return { owner: meld.owner, kind: "spread", cards: meld.cards.concat([c.text]), lo: meld.lo, hi: meld.hi + 1 };
  }

  function clone(s) {
    return {
      hands: s.hands.map(function (h) { return h.slice(); }),
      stock: s.stock.slice(), discard: s.discard.slice(), table: s.table.slice(),
      toAct: s.toAct, picked: s.picked
    };
  }

  function removeCard(hand, text) {
    var i = hand.indexOf(canonical(text));
    if (i < 0) throw new Error(text + " is not in the hand");
    hand.splice(i, 1);
  }

  /* Every step of a hand: 0 is the deal, step i the table after action i-1, and a faulted
   * hand gets one more step for the fault. Each step: {state, event, outcome?}. */
  function buildSteps(hand) {
    var n = hand.players.length;
    var rules = rulesOf(hand);
    var lat = hand.latency_us || [];
    var faults = hand.faults || [];
    var state = {
      hands: hand.hands.map(function (h) { return h.map(canonical); }),
      stock: (hand.stock || []).map(canonical),
      discard: (hand.discard || []).map(canonical),
      table: (hand.table || []).map(function (m) { return makeMeld(m.owner, m.cards, rules); }),
      toAct: typeof hand.to_act === "number" ? hand.to_act : (hand.dealer + 1) % n,
      picked: null
    };
    var steps = [{ state: clone(state), event: { kind: "deal", dealer: hand.dealer, toAct: state.toAct } }];
    hand.actions.forEach(function (a, i) {
      var s = clone(state);
      var seat = a.seat;
      var ev = { kind: "", seat: seat, index: i, latency_us: lat[i] };
      if (a.draw !== undefined) {
        var card = a.draw === "stock" ? s.stock.shift() : s.discard.pop();
        s.hands[seat].push(card);
        s.picked = a.draw === "discard" ? card : null;
        ev.kind = "draw"; ev.source = a.draw; ev.card = card;
      } else if (a.meld !== undefined) {
        a.meld.forEach(function (t) { removeCard(s.hands[seat], t); });
        var meld = makeMeld(seat, a.meld, rules);
        s.table.push(meld);
        ev.kind = "meld"; ev.cards = a.meld.map(canonical); ev.meld = meld;
      } else if (a.layoff !== undefined) {
        removeCard(s.hands[seat], a.layoff);
        ev.kind = "layoff"; ev.card = canonical(a.layoff); ev.onto = a.onto; ev.target = s.table[a.onto];
        s.table[a.onto] = extend(s.table[a.onto], a.layoff);
      } else if (a.discard !== undefined) {
        removeCard(s.hands[seat], a.discard);
        s.discard.push(canonical(a.discard));
        s.picked = null;
        ev.kind = "discard"; ev.card = canonical(a.discard);
        if (s.hands[seat].length > 0) {
          if (s.stock.length === 0 && rules.stock_reshuffle && s.discard.length > 1) {
            s.stock = s.discard.slice(0, -1);  // the pile turned over: its bottom card on top
            s.discard = s.discard.slice(-1);
            ev.reshuffled = true;
          }
          s.toAct = (seat + 1) % n;
        }
      } else if (a.drop) {
        ev.kind = "drop"; ev.total = total(s.hands[seat]);
      }
      state = s;
      steps.push({ state: clone(state), event: ev });
    });
    var outcome = hand.outcome || null;
    if (outcome && outcome.end === "fault") {
      var fault = faults[0] || { seat: outcome.faulted, kind: "fault", reason: "" };
      steps.push({ state: clone(state), event: { kind: "fault", seat: fault.seat, fault: fault, index: hand.actions.length } });
    }
    if (outcome) steps[steps.length - 1].outcome = outcome;
    return steps;
  }

  function joinNames(names) {
    if (names.length <= 1) return names.join("");
    return names.slice(0, -1).join(", ") + " and " + names[names.length - 1];
  }

  function meldWords(meld) {
    if (meld.kind === "book") {
      var r = parseCard(meld.cards[0]).rank;
      return "a book of " + (RANK_NAME[r] || RANKS[r - 1] + "s");
    }
    return "a spread of " + SUIT_NAME[parseCard(meld.cards[0]).suit];
  }

  function plural(n, word) { return n + " " + word + (Math.abs(n) === 1 ? "" : "s"); }

  /* The outcome in one sentence. */
  function outcomeText(outcome, names, lastEvent) {
    var pay = outcome.payoffs, tot = outcome.totals;
    var winners = outcome.winners.map(function (w) { return names[w]; });
    switch (outcome.end) {
      case "tonk":
        if (outcome.winners.length === names.length) return "Everyone has TONK: nobody pays.";
        return joinNames(winners) + (winners.length > 1 ? " have" : " has") + " TONK (a dealt hand of 15 or less, or 49 or more): " +
          (winners.length > 1 ? "each wins " : "wins ") + "2 from every player without it.";
      case "drop": {
        var d = lastEvent && lastEvent.kind === "drop" ? lastEvent.seat : outcome.winners[0];
        if (outcome.winners.length === 1 && outcome.winners[0] === d) {
          return names[d] + " goes down with " + tot[d] + ": lowest, wins " + pay[d] + ".";
        }
        var low = tot[outcome.winners[0]];
        return names[d] + " goes down with " + tot[d] + ", but " + joinNames(winners) +
          (winners.length > 1 ? " have " : " has ") + low + ": " + names[d] + " pays " + (-pay[d]) + ".";
      }
      case "out":
        return names[outcome.winners[0]] + " goes out (no cards left) and wins " + pay[outcome.winners[0]] + ".";
      case "stock":
      case "cap": {
        var why = outcome.end === "stock" ? "The stock is empty" : "The turn limit is reached";
        var lowT = tot[outcome.winners[0]];
        if (outcome.winners.length === names.length) return why + ": showdown, everyone ties on " + lowT + ". Nobody pays.";
        return why + ": showdown. Lowest total " + lowT + ": " + joinNames(winners) + (winners.length > 1 ? " each win " : " wins ") +
          pay[outcome.winners[0]] + ".";
      }
      case "fault": {
        var f = outcome.faulted;
        return names[f] + " forfeits the hand for a fault and pays 2 to every other player (" + plural(-pay[f], "chip") + " in all).";
      }
    }
    return "The hand is over.";
  }

  /* A plain-language caption of one step. ``viewer`` is a seat number, or null for everything. */
  function caption(step, hand, viewer) {
    var names = hand.players;
    var ev = step.event;
    var who = function (seat) { return names[seat] + (viewer === seat ? " (you)" : ""); };
    var text = "";
    switch (ev.kind) {
      case "deal":
        text = names[ev.dealer] + " deals 5 cards to each player and turns up " + label(step.state.discard[step.state.discard.length - 1] || "") +
          " to start the discard pile. " + names[ev.toAct] + " plays first.";
        if (hand.start === "position") text = "The hand starts from a position already under way. " + names[ev.toAct] + " is to play.";
        break;
      case "draw":
        if (ev.source === "stock") {
          text = who(ev.seat) + " draws from the stock" + (viewer === null || viewer === ev.seat ? " (" + label(ev.card) + ")" : "") + ".";
        } else {
          text = who(ev.seat) + " takes " + label(ev.card) + " from the discard pile.";
        }
        break;
      case "meld":
        text = who(ev.seat) + " lays down " + labels(ev.cards) + ", " + meldWords(ev.meld) + ".";
        break;
      case "layoff":
        text = who(ev.seat) + " lays off " + label(ev.card) + " on " + (ev.target.owner === ev.seat ? "their own" : names[ev.target.owner] + "'s") +
          " " + labels(ev.target.cards) + ".";
        break;
      case "discard":
        text = who(ev.seat) + " discards " + label(ev.card) + "." + (ev.reshuffled ? " The stock was empty: the discard pile is turned over as the new stock." : "");
        break;
      case "drop":
        text = who(ev.seat) + " goes down with " + ev.total + ".";
        break;
      case "fault":
        text = names[ev.seat] + " faulted: " + ev.fault.kind + (ev.fault.reason ? " (" + ev.fault.reason + ")" : "") + ".";
        break;
    }
    if (step.outcome) {
      if (ev.kind === "drop") text = "";
      text = (text ? text + " " : "") + outcomeText(step.outcome, names, ev);
    }
    return text;
  }

  /* The log line of an action, as ``viewer`` may see it. */
  function logText(ev, hand, viewer) {
    switch (ev.kind) {
      case "draw":
        if (ev.source === "discard") return "takes " + label(ev.card) + " from the discard pile";
        return "draws from the stock" + (viewer === null || viewer === ev.seat ? " (" + label(ev.card) + ")" : "");
      case "meld": return "lays down " + labels(ev.cards);
      case "layoff": return "lays off " + label(ev.card) + " on meld " + (ev.onto + 1);
      case "discard": return "discards " + label(ev.card);
      case "drop": return "goes down with " + ev.total;
      case "fault": return "FAULT: " + ev.fault.kind + (ev.fault.reason ? ": " + ev.fault.reason : "");
    }
    return "";
  }

  var api = {
    parseCard: parseCard, label: label, total: total, buildSteps: buildSteps, caption: caption,
    logText: logText, outcomeText: outcomeText, makeMeld: makeMeld, SYMBOL: SYMBOL
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.Tonk = api;
})(this);
