/* The live tournament page: polls /api/v1/tournaments/<id>/live?html=1 while the tournament
 * is not finished and swaps in the progress, timing, running matches, the
 * latest finished deals ("now showing"), standings, matrix, tables and a
 * sequential test's state and LLR chart as the server renders them (no reload).
 * At the end it says "finished" and brings in the headline. */
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box) return;
  var url = box.getAttribute("data-progress-url");
  var dot = box.querySelector(".live-dot"), bar = box.querySelector(".bar");
  var badge = document.getElementById("t-status");
  var PERIOD_MS = +box.getAttribute("data-poll-ms") || 3000;
  var PARTS = ["result", "sequential", "timing", "running", "now_showing", "standings", "matrix", "tables"];
  // What the server last sent for each part: a part is swapped only when that changes (the
  // browser's own serialization of a chart's SVG differs from the server's text).
  var last = {};

  function show(live) {
    var p = live.progress;
    var fields = { percent: p.percent, total: p.matches.total, hands_played: p.hands_played, hands_planned: p.hands_planned };
    ["done", "running", "pending", "failed"].forEach(function (k) { fields[k] = p.matches[k]; });
    Object.keys(fields).forEach(function (k) {
      var el = box.querySelector('[data-field="' + k + '"]');
      if (el) el.textContent = fields[k];
    });
    if (bar) bar.style.width = p.percent + "%";
    var meter = box.querySelector("[role=progressbar]");
    if (meter) meter.setAttribute("aria-valuenow", p.percent);
    PARTS.forEach(function (part) {
      var el = document.getElementById(part);
      // Server-rendered from the same templates as the page (no script in them; the CSP forbids inline).
      var html = live.html && live.html[part];
      if (el && html !== undefined && html !== last[part]) {
        last[part] = html;
        if (el.innerHTML !== html) el.innerHTML = html;
      }
    });
    if (badge) {
      var span = badge.querySelector(".status");
      if (span) { span.textContent = live.status; span.className = "status status-" + live.status; }
    }
    box.setAttribute("data-status", live.status);
  }

  function tick() {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { setTimeout(tick, PERIOD_MS * 3); return; }
        show(data.live);
        if (data.live.status === "finished") { dot.hidden = true; return; }
        setTimeout(tick, PERIOD_MS);
      })
      .catch(function () { setTimeout(tick, PERIOD_MS * 3); });
  }

  if (box.getAttribute("data-status") !== "finished") {
    dot.hidden = false;
    setTimeout(tick, PERIOD_MS);
  }
})();
