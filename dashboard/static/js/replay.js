/* The replay viewer of the match page. It only draws: every step of every hand (the cards,
 * totals, caption, payments) comes from the server, computed by the engine
 * (/api/v1/matches/<id>/steps, dashboard/queries/replay_steps.py). The URL's hash carries
 * the hand and the step (#hand=2&step=14, or step=end), so a link opens that moment
 * (&play=1: and plays from there). */
(function () {
  "use strict";
  var root = document.getElementById("viewer");
  if (!root) return;

  var $ = function (id) { return document.getElementById(id); };
  var felt = $("felt"), log = $("log"), caption = $("caption"), handSelect = $("hand-select");
  var speed = $("speed"), perspective = $("perspective"), stepCount = $("step-count");
  var payoffs = $("payoffs"), download = $("hand-download"), timeline = $("timeline");
  var strip = $("hand-strip"), results = $("show-results");
  var playButton = root.querySelector('[data-cmd="play"]');
  var apiBase = root.getAttribute("data-api-base");

  var hands = [], steps = [], h = 0, i = 0, viewer = null, timer = null;

  function node(tag, klass, text, parent) {
    var n = document.createElement(tag);
    if (klass) n.className = klass;
    if (text !== undefined && text !== null) n.textContent = text;
    if (parent) parent.appendChild(n);
    return n;
  }
  function signed(v) { return v > 0 ? "+" + v : v < 0 ? "\u2212" + (-v) : "0"; }
  function sign(v) { return v > 0 ? "pos" : v < 0 ? "neg" : ""; }
  function names() { return (hands[h] && hands[h].players) || []; }
  function hidden(seat) { return viewer !== null && viewer !== seat; }
  function showing() { return results.checked; }

  function init(data) {
    hands = (data.hands || []).map(function (hand, k) {
      return hand.error ? { index: k, error: hand.error, players: [], steps: [] } : hand;
    });
    if (!hands.length) { caption.textContent = "This match has no hands to show."; return; }
    var first = hands.filter(function (x) { return !x.error; })[0] || hands[0];
    first.players.forEach(function (name, seat) {
      node("option", null, "What " + name + " saw", perspective).value = String(seat);
    });
    timeline.setAttribute("aria-valuetext", "");
    var at = readHash();
    results.checked = at.results;
    drawHandLists();
    drawPayoffs(first.players);
    if (at.view !== null && at.view < first.players.length) { viewer = at.view; perspective.value = String(at.view); }
    loadHand(at.hand, at.step < 0, at.step);
    root.classList.add("ready");
    // play=1: opened from "now showing" (or a link to it), so it plays as a broadcast would.
    if (at.play) play();
  }

  /* --- the URL: #hand=H&step=S[&view=V][&results=1][&play=1: start playing] ------------ */
  function readHash() {
    var q = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var p = kv.split("=");
      if (p.length === 2) q[p[0]] = p[1];
    });
    var num = function (k) { return /^\d+$/.test(q[k] || "") ? +q[k] : null; };
    // step=end: the hand's last step (where a fault shows; links from a bot's faults use it).
    // hasView/hasResults: whether the hash says them at all (a link to a hand keeps the rest).
    return { hand: num("hand") || 0, step: q.step === "end" ? -1 : num("step") || 0, view: num("view"), results: q.results === "1", play: q.play === "1",
             hasView: "view" in q, hasResults: "results" in q };
  }
  function writeHash() {
    var hash = "#hand=" + h + "&step=" + i + (viewer !== null ? "&view=" + viewer : "") + (showing() ? "&results=1" : "");
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }
  // A hash typed or linked to: its view and results apply too (before, only its hand and step
  // did, and the next write dropped the rest); what it leaves out stays as it is.
  window.addEventListener("hashchange", function () {
    var at = readHash(), changed = false;
    if (!hands.length) return;
    if (at.hasView) {
      var seats = names().length, want = at.view !== null && at.view < seats ? at.view : null;
      if (want !== viewer) { viewer = want; perspective.value = want === null ? "all" : String(want); changed = true; }
    }
    if (at.hasResults && at.results !== showing()) { results.checked = at.results; changed = true; }
    if (changed) drawHandLists();
    if (at.hand !== h || at.step !== i) { stop(); loadHand(at.hand, at.step < 0, at.step); }
    else if (changed) { drawLog(); render(); }
    else writeHash();
  });

  /* --- hands: the select list, the strip across the match, the payoffs table ----------- */
  // A hand's outcome, once results are shown; in one seat's view only of the hands that seat
  // has seen end by the moment shown (as its log shows nothing ahead of that moment).
  function ended(k) { return viewer === null || k < h || (k === h && i === steps.length - 1); }
  function handWords(hand, k) {
    var o = hand.outcome;
    if (hand.error) return "cannot be shown";
    if (!showing() || !o || !ended(k)) return "";
    return o.winners.map(function (w) { return hand.players[w]; }).join(", ") + " \u00b7 " + hand.end_words;
  }
  function handLabel(hand, k) {
    var words = handWords(hand, k);
    return "Hand " + (k + 1) + " of " + hands.length + (words ? ": " + words : "");
  }
  function drawHandLists() {
    handSelect.textContent = "";
    strip.textContent = "";
    hands.forEach(function (hand, k) {
      var label = handLabel(hand, k);
      node("option", null, label, handSelect).value = String(k);
      var b = node("button", "strip-hand", String(k + 1), strip);
      b.type = "button";
      b.setAttribute("data-hand", k);
      b.setAttribute("aria-label", label);
      b.title = label;
      if (showing() && hand.outcome && ended(k)) {
        var mine = viewer === null ? null : hand.outcome.payoffs[viewer];
        if (mine !== null && sign(mine)) b.classList.add(sign(mine));
        if (hand.outcome.end === "fault") b.classList.add("fault");
      }
      b.addEventListener("click", function () { stop(); loadHand(k, false, 0); });
    });
    handSelect.value = String(h);
    markHand();
    root.classList.toggle("spoilers", showing());
    document.body.classList.toggle("no-spoilers", !showing());
  }
  // In a seat's view the outcomes shown follow the moment shown: relabel as it moves.
  function relabel() {
    if (viewer === null || !showing()) return;
    hands.forEach(function (hand, k) {
      var label = handLabel(hand, k), option = handSelect.options[k], b = strip.children[k];
      if (option.textContent !== label) option.textContent = label;
      if (b.title === label) return;
      b.title = label;
      b.setAttribute("aria-label", label);
      b.classList.remove("pos", "neg", "fault");
      if (hand.outcome && ended(k)) {
        var mine = hand.outcome.payoffs[viewer];
        if (sign(mine)) b.classList.add(sign(mine));
        if (hand.outcome.end === "fault") b.classList.add("fault");
      }
    });
  }
  function markHand() {
    Array.prototype.forEach.call(strip.children, function (b) {
      var on = +b.getAttribute("data-hand") === h;
      b.classList.toggle("current", on);
      if (on) b.setAttribute("aria-current", "true"); else b.removeAttribute("aria-current");
    });
    Array.prototype.forEach.call(payoffs.querySelectorAll("tbody tr"), function (tr) {
      tr.classList.toggle("current", +tr.getAttribute("data-hand") === h);
    });
  }

  function loadHand(k, atEnd, step) {
    h = Math.max(0, Math.min(hands.length - 1, k));
    steps = hands[h].steps;
    i = atEnd ? steps.length - 1 : Math.max(0, Math.min(steps.length - 1, step || 0));
    handSelect.value = String(h);
    timeline.max = String(Math.max(0, steps.length - 1));
    download.href = apiBase + "/hands/" + h;
    download.setAttribute("download", "");  // the server names the file
    markHand();
    drawLog();
    render();
  }

  function go(k) { i = Math.max(0, Math.min(steps.length - 1, k)); render(); }

  /* --- the table ------------------------------------------------------------------------ */
  function seatOrder(n) {
    var first = viewer === null ? 0 : viewer, order = [];
    for (var s = 0; s < n; s++) order.push((first + s) % n);
    var bottom = Math.ceil(n / 2);
    return { bottom: order.slice(0, bottom), top: order.slice(bottom).reverse() };
  }

  function drawSeat(parent, seat, step, hand) {
    var ev = step.event, o = step.outcome;
    var box = node("div", "seat", null, parent);
    box.setAttribute("data-seat", seat);
    if (step.to_act === seat) box.classList.add("to-act");
    if (o && o.winners.indexOf(seat) >= 0) box.classList.add("winner");
    if (viewer === seat) box.classList.add("me");
    var head = node("div", "seat-head", null, box);
    node("span", "name", hand.players[seat], head);
    if (hand.dealer === seat) node("span", "chip dealer", "dealer", head).title = "Dealer of this hand";
    if (step.to_act === seat) node("span", "chip turn", "to play", head).title = "To play now";
    var cards = step.hands[seat];
    var meta = node("span", "meta", hidden(seat) ? cards.length + " cards" : step.totals[seat] + " pts", head);
    meta.setAttribute("data-total", hidden(seat) ? "" : step.totals[seat]);
    var row = node("div", "hand-cards", null, box);
    row.setAttribute("data-seat", seat);
    var fresh = ev.kind === "draw" && ev.seat === seat ? ev.card : null;
    cards.forEach(function (c) {
      var card = hidden(seat) ? Cards.back(hand.players[seat] + "'s card") : Cards.face(c);
      if (!hidden(seat) && c === fresh) card.classList.add("fresh");
      row.appendChild(card);
    });
    if (!cards.length) node("span", "empty-hand", "no cards left", row);
    if (o) {
      var p = node("div", "payoff " + sign(o.payoffs[seat]), signed(o.payoffs[seat]) + " \u00b7 total " + o.totals[seat], box);
      p.setAttribute("data-payoff", o.payoffs[seat]);
    }
  }

  function drawCenter(parent, step, hand) {
    var ev = step.event;
    var center = node("div", "center", null, parent);
    var piles = node("div", "piles", null, center);
    var stock = node("div", "pile stock", null, piles);
    stock.appendChild(step.stock ? Cards.back("the stock") : node("div", "slot"));
    node("div", "pile-label", "Stock \u00b7 " + step.stock, stock);
    var discard = node("div", "pile discard", null, piles);
    var fan = node("div", "fan", null, discard);
    step.discard.forEach(function (c, k, arr) {
      var card = Cards.face(c);
      if (k === arr.length - 1 && ev.kind === "discard") card.classList.add("fresh");
      fan.appendChild(card);
    });
    if (!step.discard.length) fan.appendChild(node("div", "slot"));
    node("div", "pile-label", "Discard pile \u00b7 " + step.discard_size, discard);
    var melds = node("div", "melds", null, center);
    if (!step.table.length) node("div", "no-melds", "No melds on the table yet", melds);
    step.table.forEach(function (m, k) {
      var box = node("div", "meld", null, melds);
      if ((ev.kind === "meld" && k === step.table.length - 1) || (ev.kind === "layoff" && ev.onto === k)) box.classList.add("fresh");
      node("div", "meld-label", (k + 1) + ". " + hand.players[m.owner] + "'s " + m.kind, box);
      var row = node("div", "meld-cards", null, box);
      m.cards.forEach(function (c) { row.appendChild(Cards.face(c)); });
    });
  }

  function words(step, key) {
    var ev = step.event;
    var secret = step[key + "_hidden"];
    return secret && ev.seat !== undefined && hidden(ev.seat) ? secret : step[key];
  }

  function render() {
    var hand = hands[h], step = steps[i];
    felt.textContent = "";
    felt.setAttribute("data-hand", h);
    felt.setAttribute("data-step", i);
    felt.setAttribute("data-view", viewer === null ? "all" : String(viewer));
    timeline.value = String(i);
    if (hand.error) { caption.textContent = hand.error; stepCount.textContent = ""; writeHash(); return; }
    var order = seatOrder(hand.players.length);
    var top = node("div", "seat-row top", null, felt);
    order.top.forEach(function (s) { drawSeat(top, s, step, hand); });
    drawCenter(felt, step, hand);
    var bottom = node("div", "seat-row bottom", null, felt);
    order.bottom.forEach(function (s) { drawSeat(bottom, s, step, hand); });
    caption.textContent = words(step, "caption");
    var where = "Hand " + (h + 1) + " of " + hands.length + " \u00b7 step " + i + " of " + (steps.length - 1);
    stepCount.textContent = where;
    timeline.setAttribute("aria-valuetext", where);
    Array.prototype.forEach.call(log.children, function (li) {
      var k = +li.getAttribute("data-step");
      li.classList.toggle("current", k === i);
      li.classList.toggle("future", k > i);
      // A seat saw nothing ahead of the moment shown; nor does a spectator avoiding spoilers.
      li.hidden = (viewer !== null || !showing()) && k > i;
    });
    var current = log.querySelector(".current");
    if (current) log.scrollTop = Math.max(0, current.offsetTop - log.clientHeight / 2);
    relabel();
    writeHash();
  }

  function drawLog() {
    var hand = hands[h];
    log.textContent = "";
    steps.forEach(function (step, k) {
      var ev = step.event;
      var li = node("li", "ev-" + ev.kind, null, log);
      li.setAttribute("data-step", k);
      li.tabIndex = -1;
      var line = node("span", "line", null, li);
      if (ev.kind === "deal") {
        node("span", "what", step.log, line);
        node("span", "lat", "", li);
        node("span", "dl", "", li);
      } else {
        node("b", "who", hand.players[ev.seat], line);
        node("span", "what", " " + words(step, "log"), line);
        var ms = ev.latency_us === undefined ? null : ev.latency_us / 1000;
        // The time charged to the bot (the worker's lag left out): a fast bot's is under 0.01 ms.
        var lat = node("span", "lat", ms === null ? "" : (ms < 0.005 ? "< 0.01" : ms < 10 ? ms.toFixed(2) : ms.toFixed(0)) + " ms", li);
        lat.title = "Time charged to the bot for this decision: from sending the request to receiving its reply, the arena's own lag left out";
        if (ev.kind === "fault") li.classList.add("fault");
        var a = node("a", "dl", "\u2913", li);
        a.href = apiBase + "/hands/" + h + "/decisions/" + ev.index;
        a.title = "Download this decision: the exact request the bot received (for tonk replay-decision)";
        a.setAttribute("aria-label", "Download decision " + ev.index + " of hand " + (h + 1));
        a.setAttribute("download", "");
        a.addEventListener("click", function (e) { e.stopPropagation(); });
      }
      if (step.outcome) node("div", "outcome", hand.summary, li);
      li.addEventListener("click", function () { stop(); go(k); });
    });
  }

  function drawPayoffs(players) {
    payoffs.textContent = "";
    var head = node("tr", null, null, node("thead", null, null, payoffs));
    node("th", "num", "Hand", head);
    node("th", null, "How it ended", head);
    players.forEach(function (n) { node("th", "num", n, head); });
    var body = node("tbody", null, null, payoffs);
    var running = players.map(function () { return 0; });
    hands.forEach(function (hand, k) {
      var o = hand.outcome || { payoffs: [], winners: [] };
      var tr = node("tr", null, null, body);
      tr.setAttribute("data-hand", k);
      node("td", "num", String(k + 1), tr);
      node("td", null, hand.end_words || hand.error || "", tr);
      players.forEach(function (_, s) {
        var p = o.payoffs[s] || 0;
        running[s] += p;
        var td = node("td", "num " + sign(p), signed(p), tr);
        if (o.end === "fault" && o.faulted === s) td.classList.add("fault");
      });
      tr.addEventListener("click", function () { stop(); loadHand(k, false, 0); });
    });
    var foot = node("tr", "totals", null, node("tfoot", null, null, payoffs));
    node("td", null, "", foot);
    node("td", null, "Match score", foot);
    running.forEach(function (v) { node("td", "num " + sign(v), signed(v), foot); });
  }

  /* --- controls --------------------------------------------------------------------------- */
  function forward() {
    if (i < steps.length - 1) { go(i + 1); return true; }
    if (h < hands.length - 1) { loadHand(h + 1, false, 0); return true; }
    return false;
  }
  function back() {
    if (i > 0) go(i - 1);
    else if (h > 0) loadHand(h - 1, true);
  }
  // Playing, a hand's result stays up a while before the next deal replaces it.
  var RESULT_TICKS = 3, RESULT_MIN_MS = 1500;
  function tick() {
    var wait = +speed.value;
    if (i === steps.length - 1 && h < hands.length - 1) wait = Math.max(RESULT_TICKS * wait, RESULT_MIN_MS);
    timer = setTimeout(function () { if (forward()) tick(); else stop(); }, wait);
  }
  function play() {
    if (timer) return;
    playButton.textContent = "\u275a\u275a Pause";
    playButton.setAttribute("aria-label", "Pause");
    playButton.classList.add("playing");
    tick();
  }
  function stop() {
    if (!timer) return;
    clearTimeout(timer);
    timer = null;
    playButton.textContent = "\u25b6 Play";
    playButton.setAttribute("aria-label", "Play");
    playButton.classList.remove("playing");
  }
  function toggle() { if (timer) stop(); else play(); }

  var commands = {
    "prev-hand": function () { stop(); loadHand(h - 1, false, 0); },
    "next-hand": function () { stop(); loadHand(h + 1, false, 0); },
    first: function () { stop(); go(0); },
    last: function () { stop(); go(steps.length - 1); },
    back: function () { stop(); back(); },
    forward: function () { stop(); forward(); },
    play: toggle
  };
  root.querySelectorAll("[data-cmd]").forEach(function (b) {
    b.addEventListener("click", function () { commands[b.getAttribute("data-cmd")](); });
  });
  handSelect.addEventListener("change", function () { stop(); loadHand(+handSelect.value, false, 0); });
  timeline.addEventListener("input", function () { stop(); go(+timeline.value); });
  speed.addEventListener("change", function () { if (timer) { stop(); play(); } });
  perspective.addEventListener("change", function () {
    viewer = perspective.value === "all" ? null : +perspective.value;
    drawHandLists();
    drawLog();
    render();
  });
  results.addEventListener("change", function () { drawHandLists(); render(); });

  // Keys work whatever has focus, a select list or the slider included; only a field that
  // takes typing keeps its keys.
  var KEYS = { ArrowRight: "forward", ArrowLeft: "back", " ": "play", Home: "first", End: "last", "[": "prev-hand", "]": "next-hand" };
  var TYPING = /^(text|search|email|number|password|url|tel)$/;
  document.addEventListener("keydown", function (e) {
    if (!hands.length || e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target || {}, tag = t.tagName || "";
    if (tag === "TEXTAREA" || t.isContentEditable || (tag === "INPUT" && TYPING.test(t.type))) return;
    var key = KEYS[e.key];
    if (!key) return;
    e.preventDefault();
    commands[key]();
  }, true);

  fetch(root.getAttribute("data-steps-url"), { headers: { Accept: "application/json" } })
    .then(function (r) {
      if (!r.ok) throw new Error("the replay could not be loaded (HTTP " + r.status + ")");
      return r.json();
    })
    .then(init)
    .catch(function (err) { caption.textContent = String(err.message || err); root.classList.add("failed"); });
})();
