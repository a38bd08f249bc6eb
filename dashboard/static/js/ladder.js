/* The live ladder page: polls /api/v1/ladders/<id>/live?html=1 (the board at the page and
 * search this tab shows) and swaps in the counts, the board, the recent matches and "now
 * showing" as the server renders them (no reload), for as long as the page is open: a ladder
 * never finishes. Each poll sends the last ETag in If-None-Match (at first the one the page
 * was rendered with): while nothing changed the server answers 304 with no body, and the page
 * is left as it is. A part is swapped only when the server's text for it changed, so a link
 * is never replaced by the same link under a reader's click. */
(function () {
  "use strict";
  var box = document.getElementById("ladder-live");
  if (!box) return;
  var url = box.getAttribute("data-live-url");
  var dot = box.querySelector(".live-dot");
  var badge = document.getElementById("l-status");
  var PERIOD_MS = +box.getAttribute("data-poll-ms") || 3000;
  var PARTS = ["counts", "board", "recent", "now_showing"];
  // The last answer's (at first the page's own): sent back so an unchanged ladder costs a 304.
  var etag = box.getAttribute("data-etag") || null;
  // What the server last sent for each part (the browser's serialization of a part differs
  // from the server's text, so comparing innerHTML would swap every part on every answer).
  var last = {};

  function show(live) {
    PARTS.forEach(function (part) {
      var el = document.getElementById(part);
      var html = live.html && live.html[part];
      // Server-rendered from the same templates as the page (no script in them; the CSP forbids inline).
      if (el && html !== undefined && html !== last[part]) {
        last[part] = html;
        if (el.innerHTML !== html) el.innerHTML = html;
      }
    });
    if (badge) {
      var span = badge.querySelector(".status");
      // Its state, not its status: a ladder whose scheduler stopped is "stopped", not "running".
      var state = live.state || live.status;
      if (span) { span.textContent = state; span.className = "status status-" + state; }
    }
  }

  function tick() {
    var headers = { Accept: "application/json" };
    if (etag) headers["If-None-Match"] = etag;
    // no-store: the browser's cache must not answer in our place (or turn a 304 into a 200).
    fetch(url, { headers: headers, cache: "no-store" })
      .then(function (r) {
        if (r.status === 304) return "same";
        if (!r.ok) return null;
        etag = r.headers.get("ETag");
        return r.json();
      })
      .then(function (data) {
        if (!data) { setTimeout(tick, PERIOD_MS * 3); return; }
        if (data !== "same") show(data.live);
        setTimeout(tick, PERIOD_MS);
      })
      .catch(function () { setTimeout(tick, PERIOD_MS * 3); });
  }

  dot.hidden = false;
  setTimeout(tick, PERIOD_MS);
})();
