/* A person's seat at a table (issue #39): the page of /tables/<id>. It only draws what the
 * seat's view says (/tables/<id>/view.json, its fields in docs/people.md): the
 * person's hand, the discard pile, the stock's size, each opponent's card count and what they
 * laid down, the legal actions as buttons and keys, the clock, each hand's and the match's
 * result. Every text goes in with textContent and every card through cards.js, so nothing
 * reaches the page that the view did not carry; the rules live on the server.
 *
 * Live: an EventSource on /events (the browser resends the last id it saw on a reconnect, so
 * the server resumes from there); when the stream cannot be opened, long polling of
 * view.json?after=<version>. A closed tab reopened loads view.json afresh: the seat is the
 * server's, not the tab's. */
(function () {
  "use strict";
  var root = document.getElementById("table");
  if (!root) return;

  var $ = function (id) { return document.getElementById(id); };
  var base = root.getAttribute("data-base");
  var csrf = root.getAttribute("data-csrf");
  var felt = $("table-felt"), actions = $("table-actions"), statusLine = $("table-status");
  var clockBox = $("table-clock"), clockText = $("clock-text"), clockBar = $("clock-bar");
  var handNo = $("table-hand"), log = $("table-log"), results = $("table-results");
  var resultBox = $("table-result"), notice = $("table-notice");

  // Keys by the action's place in the list: 1-9, 0, then the letter rows (documented on the page).
  var KEYS = "1234567890qwertyuiopasdfghjklzxcvbnm".split("");
  var STATUS_WORDS = {
    starting: "The cards are being dealt\u2026",
    your_turn: "Your turn: pick an action.",
    waiting: "Waiting for the others\u2026",
    hand_over: "The hand is over.",
    match_over: "The match is over."
  };

  var view = null, busy = false, seenHands = {};
  var deadline = null, clockTotal = 0, clockTimer = null;
  var source = null, polling = false, streamErrors = 0, closed = false;

  function node(tag, klass, text, parent) {
    var n = document.createElement(tag);
    if (klass) n.className = klass;
    if (text !== undefined && text !== null) n.textContent = String(text);
    if (parent) parent.appendChild(n);
    return n;
  }
  function signed(v) { return v > 0 ? "+" + v : v < 0 ? "\u2212" + (-v) : "0"; }
  function sign(v) { return v > 0 ? "pos" : v < 0 ? "neg" : ""; }
  function list(x) { return Array.isArray(x) ? x : []; }
  function num(x) { return typeof x === "number" && isFinite(x) ? x : null; }
  // A card as drawn by the replay viewer, each drawn once and cloned after (a view is redrawn
  // whole); a text the drawing does not know stays text.
  var drawn = {};
  function face(card) {
    var key = "f" + card;
    if (!drawn[key]) {
      try { drawn[key] = Cards.face(card); } catch (e) { return node("span", "card-text", card); }
    }
    return drawn[key].cloneNode(true);
  }
  function back(title) {
    var key = "b" + title;
    if (!drawn[key]) drawn[key] = Cards.back(title);
    return drawn[key].cloneNode(true);
  }
  function say(text, warn) {
    notice.textContent = text || "";
    notice.hidden = !text;
    notice.classList.toggle("warn", !!warn);
  }
  function names() { return list(view && view.players).map(function (p) { return p.name; }); }
  function nameOf(seat) { var n = names()[seat]; return n === undefined ? "seat " + seat : n; }

  /* --- drawing ------------------------------------------------------------------------ */
  function drawSeat(parent, p, hand) {
    var box = node("div", "seat" + (p.you ? " me" : " them"), null, parent);
    box.setAttribute("data-seat", p.seat);
    if (p.to_move) box.classList.add("to-act");
    var head = node("div", "seat-head", null, box);
    node("span", "name", p.you ? p.name + " (you)" : p.name, head);
    if (p.to_move) node("span", "chip turn", "to play", head);
    var meta = node("span", "meta", null, head);
    node("span", "count", num(p.cards) === null ? "" : p.cards + (p.cards === 1 ? " card" : " cards"), meta);
    if (num(p.chips) !== null) node("span", "chips " + sign(p.chips), " \u00b7 " + signed(p.chips) + " chips", meta);
    var row = node("div", "hand-cards", null, box);
    row.setAttribute("data-seat", p.seat);
    if (p.you) {
      hand.forEach(function (c) { row.appendChild(face(c)); });
      if (!hand.length) node("span", "empty-hand", "no cards", row);
    } else if (Array.isArray(p.shown)) {
      // At a hand's end the rules show some hands: those cards, face up.
      box.classList.add("shown");
      p.shown.forEach(function (c) { row.appendChild(face(c)); });
    } else {
      for (var k = 0; k < (num(p.cards) || 0); k++) row.appendChild(back(p.name + "'s card"));
      if (!p.cards) node("span", "empty-hand", "no cards", row);
    }
    var spreads = list(p.spreads);
    if (spreads.length) {
      var laid = node("div", "laid", null, box);
      laid.setAttribute("aria-label", (p.you ? "What you laid down" : "What " + p.name + " laid down"));
      spreads.forEach(function (cards) {
        var m = node("div", "meld-cards", null, laid);
        list(cards).forEach(function (c) { m.appendChild(face(c)); });
      });
    }
  }

  function drawCenter(parent) {
    var center = node("div", "center", null, parent);
    var piles = node("div", "piles", null, center);
    var stock = node("div", "pile stock", null, piles);
    var n = num(view.stock) || 0;
    stock.appendChild(n ? back("the stock") : node("div", "slot"));
    var sl = node("div", "pile-label", "Stock \u00b7 " + n, stock);
    sl.id = "stock-size";
    var discard = node("div", "pile discard", null, piles);
    var fan = node("div", "fan", null, discard);
    fan.id = "discard-pile";
    var cards = list(view.discard);
    cards.forEach(function (c) { fan.appendChild(face(c)); });
    if (!cards.length) fan.appendChild(node("div", "slot"));
    node("div", "pile-label", "Discard pile \u00b7 " + cards.length, discard);
  }

  function drawFelt() {
    felt.textContent = "";
    var players = list(view.players), me = null, others = [];
    players.forEach(function (p) { if (p.you) me = p; else others.push(p); });
    // The others in play order after the person's seat, along the top.
    var n = players.length, mine = me ? me.seat : 0;
    others.sort(function (a, b) { return ((a.seat - mine + n) % n) - ((b.seat - mine + n) % n); });
    var top = node("div", "seat-row top", null, felt);
    others.forEach(function (p) { drawSeat(top, p, []); });
    drawCenter(felt);
    var bottom = node("div", "seat-row bottom", null, felt);
    if (me) drawSeat(bottom, me, list(view.hand));
  }

  function keyOf(k) { return k < KEYS.length ? KEYS[k] : null; }

  function drawActions() {
    actions.textContent = "";
    var legal = view.status === "your_turn" ? list(view.legal) : [];
    actions.classList.toggle("idle", !legal.length);
    if (!legal.length) {
      node("p", "no-actions", view.status === "match_over" ? "The match is over." : "Nothing to do until it is your turn.", actions);
      return;
    }
    legal.forEach(function (a, k) {
      var b = node("button", "act act-" + String(a.kind || "other").replace(/[^a-z_]/g, ""), null, actions);
      b.type = "button";
      b.setAttribute("data-action", a.id);
      var key = keyOf(k);
      if (key) {
        b.setAttribute("data-key", key);
        b.setAttribute("aria-keyshortcuts", key);
        node("kbd", null, key.toUpperCase(), b);
      }
      node("span", "label", a.label, b);
      var cards = list(a.cards);
      if (cards.length) {
        var row = node("span", "act-cards", null, b);
        cards.forEach(function (c) { row.appendChild(face(c)); });
      }
      b.disabled = busy;
      b.addEventListener("click", function () { act(a.id, b); });
      b.addEventListener("mouseenter", function () { mark(cards); });
      b.addEventListener("focus", function () { mark(cards); });
      b.addEventListener("mouseleave", function () { mark([]); });
      b.addEventListener("blur", function () { mark([]); });
    });
  }

  // The hand's cards an action would use, lifted while its button is pointed at.
  function mark(cards) {
    var mine = felt.querySelector(".seat.me .hand-cards");
    if (!mine) return;
    Array.prototype.forEach.call(mine.children, function (c) {
      c.classList.toggle("picked", cards.indexOf(c.getAttribute("data-card")) >= 0);
    });
  }

  function drawScores(parent, values, winners) {
    var ul = node("ul", "scores", null, parent);
    list(values).forEach(function (v, seat) {
      var li = node("li", null, null, ul);
      if (list(winners).indexOf(seat) >= 0) li.classList.add("winner");
      node("span", "who", nameOf(seat), li);
      node("span", "num " + sign(v), signed(v), li);
    });
  }

  function drawResult() {
    var r = view.result || null;
    resultBox.textContent = "";
    resultBox.hidden = !r;
    if (!r) return;
    var hand = r.hand || null, match = r.match || null;
    if (hand) {
      var hb = node("div", "hand-result", null, resultBox);
      hb.id = "hand-result";
      var title = num(hand.hand_no) !== null ? "Hand " + hand.hand_no + " result" : "Hand result";
      node("h3", null, title, hb);
      if (hand.words) node("p", "words", hand.words, hb);
      if (hand.payoffs) drawScores(hb, hand.payoffs, hand.winners);
    }
    if (match) {
      var mb = node("div", "match-result", null, resultBox);
      mb.id = "match-result";
      node("h3", null, "Match result", mb);
      if (match.words) node("p", "words", match.words, mb);
      if (match.scores) drawScores(mb, match.scores, match.winners);
    }
    var url = view.replay_url;
    if (typeof url === "string" && url.charAt(0) === "/" && url.charAt(1) !== "/") {
      var p = node("p", "replay", null, resultBox);
      var a = node("a", "watch", "Watch the replay", p);
      a.id = "replay-link";
      a.href = url;
    }
  }

  // Each hand's result as it arrives, listed for the rest of the match (from the views seen).
  function remember(hand) {
    if (!hand || typeof hand !== "object") return;
    var key = String(hand.hand_no);
    if (seenHands[key]) return;
    seenHands[key] = true;
    var li = node("li");
    li.setAttribute("data-hand", key);
    // In hand order, whichever view brought it.
    var later = Array.prototype.filter.call(results.children, function (x) { return +x.getAttribute("data-hand") > +key; })[0];
    results.insertBefore(li, later || null);
    node("b", null, num(hand.hand_no) !== null ? "Hand " + hand.hand_no + ": " : "", li);
    node("span", null, hand.words || "", li);
    var me = list(view.players).filter(function (p) { return p.you; })[0];
    var mine = me ? list(hand.payoffs)[me.seat] : undefined;
    if (num(mine) !== null) node("span", "num " + sign(mine), " (" + signed(mine) + " for you)", li);
    results.parentNode.hidden = false;
  }

  // Every finished hand's result: the view's hands_done (a reopened tab has them all), and any
  // hand result drawn since.
  function drawResults() {
    list(view.hands_done).forEach(remember);
    if (view.result && view.result.hand) remember(view.result.hand);
  }

  function drawLog() {
    log.textContent = "";
    list(view.log).forEach(function (line) { node("li", null, line, log); });
    log.scrollTop = log.scrollHeight;
  }

  function setClock() {
    var c = view.clock;
    if (!c || num(c.remaining_ms) === null || view.status !== "your_turn") {
      deadline = null;
      clockBox.hidden = true;
      return;
    }
    clockTotal = num(c.total_ms) || c.remaining_ms;
    deadline = performance.now() + c.remaining_ms;
    clockBox.hidden = false;
    tickClock();
    if (!clockTimer) clockTimer = setInterval(tickClock, 250);
  }
  function tickClock() {
    if (deadline === null) { clearInterval(clockTimer); clockTimer = null; return; }
    var left = Math.max(0, deadline - performance.now()), secs = Math.ceil(left / 1000);
    clockText.textContent = secs + " s";
    clockBar.style.width = (clockTotal ? Math.min(100, 100 * left / clockTotal) : 0) + "%";
    clockBox.setAttribute("aria-valuenow", String(secs));
    clockBox.classList.toggle("low", left < 10000);
  }

  function render(next) {
    if (!next || typeof next.version !== "number") return;
    if (view && next.version <= view.version) return;
    var began = performance.now();
    view = next;
    root.setAttribute("data-version", String(view.version));
    root.setAttribute("data-status", String(view.status));
    handNo.textContent = num(view.hand_no) !== null && num(view.hands) !== null ? "Hand " + view.hand_no + " of " + view.hands : "";
    var words = STATUS_WORDS[view.status] || "";
    var f = view.faults;
    if (f && num(f.count) && num(f.max) !== null) words += " Faults: " + f.count + " of " + f.max + ".";
    statusLine.textContent = words;
    drawFelt();
    drawActions();
    drawResult();
    drawResults();
    drawLog();
    setClock();
    if (view.status === "match_over") finish();
    // For tests and bench/seat_roundtrip.py: a view is on the page.
    var detail = { version: view.version, status: view.status, render_ms: performance.now() - began };
    document.dispatchEvent(new CustomEvent("table:drawn", { detail: detail }));
  }

  /* --- acting ------------------------------------------------------------------------- */
  function act(id, button) {
    if (busy || !view || view.status !== "your_turn") return;
    busy = true;
    Array.prototype.forEach.call(actions.querySelectorAll("button"), function (b) { b.disabled = true; });
    if (button) button.classList.add("sent");
    say("");
    fetch(base + "/act", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ version: view.version, action: id })
    }).then(function (r) {
      var after = +(r.headers.get("Retry-After") || 0);
      return r.json().catch(function () { return {}; }).then(function (body) { return { status: r.status, body: body, after: after }; });
    }).then(function (answer) {
      busy = false;
      if (answer.status === 200) { render(answer.body); drawActionsIfSame(); return; }
      var error = answer.body && answer.body.error;  // {"error": {"code", "message"}}, the API's shape
      var why = error && typeof error.message === "string" ? error.message : "";
      if (answer.status === 409) say("Not taken: " + (why || "that action is not legal now") + ". The table is shown as it is now.", true);
      else if (answer.status === 429) {
        // The buttons come back once the server will take a move again.
        say("Too fast: " + (why || "wait a moment and try again") + ".", true);
        busy = true;
        setTimeout(function () { busy = false; say(""); drawActionsIfSame(); }, 1000 * Math.min(10, Math.max(1, answer.after)));
        return;
      }
      else if (answer.status === 403) say("Your session has ended or this page is stale: reload the page (" + (why || "forbidden") + ").", true);
      else say("Not taken (HTTP " + answer.status + (why ? ": " + why : "") + ").", true);
      drawActionsIfSame();
      refresh();
    }).catch(function () {
      busy = false;
      say("The arena could not be reached; trying again\u2026", true);
      drawActionsIfSame();
      refresh();
    });
  }
  // After an answer that drew nothing new, the buttons come back.
  function drawActionsIfSame() { if (view && !busy) drawActions(); }

  var TYPING = /^(text|search|email|number|password|url|tel)$/;
  document.addEventListener("keydown", function (e) {
    if (!view || e.altKey || e.ctrlKey || e.metaKey) return;
    var t = e.target || {}, tag = t.tagName || "";
    if (tag === "TEXTAREA" || tag === "SELECT" || t.isContentEditable || (tag === "INPUT" && TYPING.test(t.type))) return;
    var key = String(e.key).toLowerCase();
    if (key === "?") { var help = $("table-keys"); if (help) help.open = !help.open; e.preventDefault(); return; }
    var b = actions.querySelector('button[data-key="' + (KEYS.indexOf(key) >= 0 ? key : "none") + '"]');
    if (!b) return;
    e.preventDefault();
    b.click();
  });

  /* --- live updates: server-sent events, else long polling --------------------------- */
  function refresh() {
    return fetch(base + "/view.json", { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(render);  // render drops a view no newer than the one drawn
  }

  function stream() {
    if (closed || !window.EventSource) { poll(); return; }
    source = new EventSource(base + "/events");
    source.addEventListener("view", function (e) {
      streamErrors = 0;
      say("");
      var next = null;
      try { next = JSON.parse(e.data); } catch (err) { return; }  // a torn message: the next one mends it
      render(next);
    });
    source.addEventListener("open", function () { streamErrors = 0; root.setAttribute("data-live", "stream"); });
    source.addEventListener("error", function () {
      if (closed) return;
      streamErrors += 1;
      root.setAttribute("data-live", "reconnecting");
      // The browser reconnects by itself (sending Last-Event-ID); a stream it gave up on, or
      // one that keeps failing, is replaced by long polling.
      if (source.readyState === EventSource.CLOSED || streamErrors >= 3) {
        source.close();
        source = null;
        poll();
      }
    });
  }

  function poll() {
    if (polling || closed) return;
    polling = true;
    root.setAttribute("data-live", "polling");
    var wait = 0;
    (function next() {
      if (closed) { polling = false; return; }
      var after = view ? view.version : -1;
      fetch(base + "/view.json?after=" + encodeURIComponent(after), { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
        .then(function (v) { wait = 0; say(""); render(v); setTimeout(next, 0); })
        .catch(function () {
          wait = Math.min(5000, wait ? wait * 2 : 500);
          say("The arena could not be reached; trying again\u2026", true);
          setTimeout(next, wait);
        });
    })();
  }

  function finish() {
    closed = true;
    if (source) { source.close(); source = null; }
    root.setAttribute("data-live", "done");
  }

  // Back from a sleeping tab or a lost network: catch up at once.
  window.addEventListener("online", function () { if (!closed) refresh().catch(function () {}); });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !closed) refresh().catch(function () {});
  });

  refresh()
    .catch(function (err) { say("The table could not be loaded (" + (err.message || err) + "); retrying\u2026", true); })
    .then(function () { root.classList.add("ready"); if (!closed) stream(); });
})();
