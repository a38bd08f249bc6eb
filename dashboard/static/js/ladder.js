/* The live ladder page: polls /api/v1/ladders/<id>/live?html=1 and swaps in the counts, the
 * board, the recent matches and "now showing" as the server renders them (no reload), for as long as the
 * page is open: a ladder never finishes. */
(function () {
  "use strict";
  var box = document.getElementById("ladder-live");
  if (!box) return;
  var url = box.getAttribute("data-live-url");
  var dot = box.querySelector(".live-dot");
  var badge = document.getElementById("l-status");
  var PERIOD_MS = +box.getAttribute("data-poll-ms") || 3000;
  var PARTS = ["counts", "board", "recent", "now_showing"];

  function show(live) {
    PARTS.forEach(function (part) {
      var el = document.getElementById(part);
      // Server-rendered from the same templates as the page (no script in them; the CSP forbids inline).
      if (el && live.html && live.html[part] !== undefined && el.innerHTML !== live.html[part]) el.innerHTML = live.html[part];
    });
    if (badge) {
      var span = badge.querySelector(".status");
      if (span) { span.textContent = live.status; span.className = "status status-" + live.status; }
    }
  }

  function tick() {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { setTimeout(tick, PERIOD_MS * 3); return; }
        show(data.live);
        setTimeout(tick, PERIOD_MS);
      })
      .catch(function () { setTimeout(tick, PERIOD_MS * 3); });
  }

  dot.hidden = false;
  setTimeout(tick, PERIOD_MS);
})();
