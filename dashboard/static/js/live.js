/* Live tournament progress: polls the JSON API while the tournament is not finished. */
(function () {
  "use strict";
  var box = document.getElementById("progress");
  if (!box) return;
  var url = box.getAttribute("data-progress-url");
  var done = +box.getAttribute("data-done");
  var dot = box.querySelector(".live-dot"), bar = box.querySelector(".bar"), reload = box.querySelector(".reload");
  var PERIOD_MS = +box.getAttribute("data-poll-ms") || 3000;

  function show(p) {
    var fields = { percent: p.percent, total: p.matches.total, hands_played: p.hands_played, hands_planned: p.hands_planned };
    ["done", "running", "pending", "failed"].forEach(function (k) { fields[k] = p.matches[k]; });
    Object.keys(fields).forEach(function (k) {
      var el = box.querySelector('[data-field="' + k + '"]');
      if (el) el.textContent = fields[k];
    });
    if (bar) bar.style.width = p.percent + "%";
    if (p.matches.done !== done && reload) reload.hidden = false;
  }

  function tick() {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) return;
        show(data.progress);
        if (data.progress.status === "finished") { dot.hidden = true; return; }
        setTimeout(tick, PERIOD_MS);
      })
      .catch(function () { setTimeout(tick, PERIOD_MS * 3); });
  }

  if (box.getAttribute("data-status") !== "finished") {
    dot.hidden = false;
    setTimeout(tick, PERIOD_MS);
  }
})();
