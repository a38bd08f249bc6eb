/* The home page's "now showing": polls /api/v1/now-showing?html=1 and swaps in the arena's
 * latest finished deals as the server renders them (no reload), for as long as the page is
 * open, as the tournament and ladder pages do theirs. */
(function () {
  "use strict";
  var box = document.getElementById("now-showing-section");
  var list = document.getElementById("now_showing");
  if (!box || !list) return;
  var url = box.getAttribute("data-live-url");
  var dot = box.querySelector(".live-dot");
  var PERIOD_MS = +box.getAttribute("data-poll-ms") || 3000;
  var last = null;

  function tick() {
    fetch(url, { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (data) {
        if (!data) { setTimeout(tick, PERIOD_MS * 3); return; }
        // Server-rendered from the same template as the page (no script in it; the CSP forbids inline).
        var html = data.html && data.html.now_showing;
        if (html !== undefined && html !== last) {
          last = html;
          if (list.innerHTML !== html) list.innerHTML = html;
        }
        setTimeout(tick, PERIOD_MS);
      })
      .catch(function () { setTimeout(tick, PERIOD_MS * 3); });
  }

  if (dot) dot.hidden = false;
  setTimeout(tick, PERIOD_MS);
})();
