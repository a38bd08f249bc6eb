/* The replay viewer of the match page: draws the table at any step of any hand, from the
 * hand records of /api/v1/matches/<id>/replay (rebuilt step by step by tonk.js). */
(function () {
  "use strict";
  var root = document.getElementById("viewer");
  if (!root) return;

  var $ = function (id) { return document.getElementById(id); };
  var felt = $("felt"), log = $("log"), caption = $("caption"), handSelect = $("hand-select");
  var speed = $("speed"), perspective = $("perspective"), stepCount = $("step-count");
  var payoffs = $("payoffs"), download = $("hand-download");
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
  var END_WORDS = { tonk: "TONK", drop: "went down", out: "went out", stock: "stock ran out", cap: "turn limit", fault: "fault" };

  function init(data) {
    hands = data.hands || [];
    if (!hands.length) { caption.textContent = "This match has no hands to show."; return; }
    var names = hands[0].players;
    hands.forEach(function (hand, k) {
      var o = hand.outcome || {};
      var who = (o.winners || []).map(function (w) { return hand.players[w]; }).join(", ");
      var label = "Hand " + (k + 1) + " of " + hands.length + (who ? ": " + who : "");
      var option = node("option", null, label, handSelect);
      option.value = k;
      option.title = END_WORDS[o.end] || "";
    });
    names.forEach(function (name, seat) {
      node("option", null, "Only what " + name + " saw", perspective).value = String(seat);
    });
    drawPayoffs(names);
    var m = /hand=(\d+)/.exec(location.hash);
    loadHand(m ? Math.min(+m[1], hands.length - 1) : 0, false);
    if (m || location.hash === "#viewer") root.scrollIntoView();
    root.classList.add("ready");
  }

  function loadHand(k, atEnd) {
    h = Math.max(0, Math.min(hands.length - 1, k));
    steps = Tonk.buildSteps(hands[h]);
    i = atEnd ? steps.length - 1 : 0;
    handSelect.value = String(h);
    download.href = apiBase + "/hands/" + h;
    download.setAttribute("download", "");  // the server names the file
    drawLog();
    render();
    Array.prototype.forEach.call(payoffs.querySelectorAll("tbody tr"), function (tr) {
      tr.classList.toggle("current", +tr.getAttribute("data-hand") === h);
    });
  }

  function go(k) { i = Math.max(0, Math.min(steps.length - 1, k)); render(); }

  function seatOrder(n) {
    var first = viewer === null ? 0 : viewer, order = [];
    for (var s = 0; s < n; s++) order.push((first + s) % n);
    var bottom = Math.ceil(n / 2);
    return { bottom: order.slice(0, bottom), top: order.slice(bottom).reverse() };
  }

  function drawSeat(parent, seat, step, hand) {
    var st = step.state, ev = step.event, o = step.outcome;
    var shown = viewer === null || viewer === seat;
    var box = node("div", "seat", null, parent);
    box.setAttribute("data-seat", seat);
    if (st.toAct === seat && !o) box.classList.add("to-act");
    if (o && o.winners.indexOf(seat) >= 0) box.classList.add("winner");
    if (viewer === seat) box.classList.add("me");
    var head = node("div", "seat-head", null, box);
    node("span", "name", hand.players[seat], head);
    if (hand.dealer === seat) node("span", "chip dealer", "dealer", head).title = "Dealer of this hand";
    if (st.toAct === seat && !o) node("span", "chip turn", "to play", head);
    var cards = st.hands[seat];
    node("span", "meta", shown ? Tonk.total(cards) + " pts" : cards.length + " cards", head);
    var row = node("div", "hand-cards", null, box);
    row.setAttribute("data-seat", seat);
    var fresh = ev.kind === "draw" && ev.seat === seat ? ev.card : null;
    cards.forEach(function (c) {
      var card = shown ? Cards.face(c) : Cards.back(hand.players[seat] + "'s card");
      if (shown && c === fresh) card.classList.add("fresh");
      row.appendChild(card);
    });
    if (!cards.length) node("span", "empty-hand", "no cards left", row);
    if (o) node("div", "payoff " + (o.payoffs[seat] > 0 ? "pos" : o.payoffs[seat] < 0 ? "neg" : ""), signed(o.payoffs[seat]) + " \u00b7 total " + o.totals[seat], box);
  }

  function drawCenter(parent, step, hand) {
    var st = step.state, ev = step.event;
    var center = node("div", "center", null, parent);
    var piles = node("div", "piles", null, center);
    var stock = node("div", "pile stock", null, piles);
    stock.appendChild(st.stock.length ? Cards.back("the stock") : node("div", "slot"));
    node("div", "pile-label", "Stock \u00b7 " + st.stock.length, stock);
    var discard = node("div", "pile discard", null, piles);
    var fan = node("div", "fan", null, discard);
    st.discard.slice(-3).forEach(function (c, k, arr) {
      var card = Cards.face(c);
      if (k === arr.length - 1 && ev.kind === "discard") card.classList.add("fresh");
      fan.appendChild(card);
    });
    if (!st.discard.length) fan.appendChild(node("div", "slot"));
    node("div", "pile-label", "Discard pile \u00b7 " + st.discard.length, discard);
    var melds = node("div", "melds", null, center);
    if (!st.table.length) node("div", "no-melds", "No melds on the table yet", melds);
    st.table.forEach(function (m, k) {
      var box = node("div", "meld", null, melds);
      if ((ev.kind === "meld" && k === st.table.length - 1) || (ev.kind === "layoff" && ev.onto === k)) box.classList.add("fresh");
      node("div", "meld-label", (k + 1) + ". " + hand.players[m.owner] + "'s " + m.kind, box);
      var row = node("div", "meld-cards", null, box);
      m.cards.forEach(function (c) { row.appendChild(Cards.face(c)); });
    });
  }

  function render() {
    var hand = hands[h], step = steps[i];
    felt.textContent = "";
    felt.setAttribute("data-hand", h);
    felt.setAttribute("data-step", i);
    felt.setAttribute("data-view", viewer === null ? "all" : String(viewer));
    var order = seatOrder(hand.players.length);
    var top = node("div", "seat-row top", null, felt);
    order.top.forEach(function (s) { drawSeat(top, s, step, hand); });
    drawCenter(felt, step, hand);
    var bottom = node("div", "seat-row bottom", null, felt);
    order.bottom.forEach(function (s) { drawSeat(bottom, s, step, hand); });
    caption.textContent = Tonk.caption(step, hand, viewer);
    stepCount.textContent = "Step " + i + " of " + (steps.length - 1);
    Array.prototype.forEach.call(log.children, function (li) {
      var k = +li.getAttribute("data-step");
      li.classList.toggle("current", k === i);
      li.classList.toggle("future", k > i);
      // A seat saw nothing ahead of the moment shown: its view hides what comes later.
      li.hidden = viewer !== null && k > i;
    });
    var current = log.querySelector(".current");
    if (current && current.scrollIntoView) current.scrollIntoView({ block: "nearest" });
  }

  function drawLog() {
    var hand = hands[h];
    log.textContent = "";
    steps.forEach(function (step, k) {
      var ev = step.event;
      var li = node("li", "ev-" + ev.kind, null, log);
      li.setAttribute("data-step", k);
      var line = node("span", "line", null, li);
      if (ev.kind === "deal") {
        node("span", "what", hand.players[hand.dealer] + " deals", line);
        node("span", "lat", "", li);
        node("span", "dl", "", li);
      } else {
        node("b", "who", hand.players[ev.seat], line);
        node("span", "what", " " + Tonk.logText(ev, hand, viewer), line);
        var ms = ev.latency_us === undefined ? null : ev.latency_us / 1000;
        var lat = node("span", "lat", ms === null ? "" : (ms < 10 ? ms.toFixed(2) : ms.toFixed(0)) + " ms", li);
        lat.title = "How long the bot took to decide";
        if (ev.kind === "fault") li.classList.add("fault");
        var a = node("a", "dl", "\u2913", li);
        a.href = apiBase + "/hands/" + h + "/decisions/" + ev.index;
        a.title = "Download this decision: the exact request the bot received (for tonk replay-decision)";
        a.setAttribute("download", "");
        a.addEventListener("click", function (e) { e.stopPropagation(); });
      }
      if (step.outcome) node("div", "outcome", Tonk.outcomeText(step.outcome, hand.players, ev), li);
      li.addEventListener("click", function () { stop(); go(k); });
    });
  }

  function drawPayoffs(names) {
    payoffs.textContent = "";
    var head = node("tr", null, null, node("thead", null, null, payoffs));
    node("th", "num", "Hand", head);
    node("th", null, "How it ended", head);
    names.forEach(function (n) { node("th", "num", n, head); });
    var body = node("tbody", null, null, payoffs);
    var running = names.map(function () { return 0; });
    hands.forEach(function (hand, k) {
      var o = hand.outcome || { payoffs: [], winners: [] };
      var tr = node("tr", null, null, body);
      tr.setAttribute("data-hand", k);
      node("td", "num", String(k + 1), tr);
      node("td", null, END_WORDS[o.end] || o.end || "", tr);
      names.forEach(function (_, s) {
        var p = o.payoffs[s] || 0;
        running[s] += p;
        var td = node("td", "num " + (p > 0 ? "pos" : p < 0 ? "neg" : ""), signed(p), tr);
        if ((hand.faults || []).some(function (f) { return f.seat === s; })) td.classList.add("fault");
      });
      tr.addEventListener("click", function () { stop(); loadHand(k, false); });
    });
    var foot = node("tr", "totals", null, node("tfoot", null, null, payoffs));
    node("td", null, "", foot);
    node("td", null, "Match score", foot);
    running.forEach(function (v) { node("td", "num " + (v > 0 ? "pos" : v < 0 ? "neg" : ""), signed(v), foot); });
  }

  function forward() {
    if (i < steps.length - 1) { go(i + 1); return true; }
    if (h < hands.length - 1) { loadHand(h + 1, false); return true; }
    return false;
  }
  function back() {
    if (i > 0) go(i - 1);
    else if (h > 0) loadHand(h - 1, true);
  }
  function play() {
    if (timer) return;
    playButton.textContent = "\u275a\u275a Pause";
    playButton.classList.add("playing");
    timer = setInterval(function () { if (!forward()) stop(); }, +speed.value);
  }
  function stop() {
    if (!timer) return;
    clearInterval(timer);
    timer = null;
    playButton.textContent = "\u25b6 Play";
    playButton.classList.remove("playing");
  }
  function toggle() { if (timer) stop(); else play(); }

  var commands = {
    "prev-hand": function () { stop(); loadHand(h - 1, false); },
    "next-hand": function () { stop(); loadHand(h + 1, false); },
    first: function () { stop(); go(0); },
    last: function () { stop(); go(steps.length - 1); },
    back: function () { stop(); back(); },
    forward: function () { stop(); forward(); },
    play: toggle
  };
  root.querySelectorAll("[data-cmd]").forEach(function (b) {
    b.addEventListener("click", function () { commands[b.getAttribute("data-cmd")](); });
  });
  handSelect.addEventListener("change", function () { stop(); loadHand(+handSelect.value, false); });
  speed.addEventListener("change", function () { if (timer) { stop(); play(); } });
  perspective.addEventListener("change", function () {
    viewer = perspective.value === "all" ? null : +perspective.value;
    drawLog();
    render();
  });
  document.addEventListener("keydown", function (e) {
    if (!hands.length || e.altKey || e.ctrlKey || e.metaKey) return;
    var tag = (e.target && e.target.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || (tag === "SELECT" && e.key !== " ")) return;
    var key = { ArrowRight: "forward", ArrowLeft: "back", " ": "play", Home: "first", End: "last", "[": "prev-hand", "]": "next-hand" }[e.key];
    if (!key) return;
    e.preventDefault();
    commands[key]();
  });

  fetch(root.getAttribute("data-replay-url"), { headers: { Accept: "application/json" } })
    .then(function (r) {
      if (!r.ok) throw new Error("the replay could not be loaded (HTTP " + r.status + ")");
      return r.json();
    })
    .then(init)
    .catch(function (err) { caption.textContent = String(err.message || err); root.classList.add("failed"); });
})();
