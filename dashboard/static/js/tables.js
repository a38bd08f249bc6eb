/* Tables on a phone: each row becomes a card (static/css/spectator.css, "stacked tables"), and
 * each cell then needs its column's name beside it. The names are the table's own header,
 * copied here into data-label, so no template repeats them; a table drawn later (the live
 * pages swap theirs in, the replay draws its payoffs) is labelled when it arrives. Without
 * this script a table scrolls sideways in its box, as it did before. */
(function () {
  "use strict";

  // A table drawn as blocks loses its table semantics in the accessibility tree: say them.
  function roles(table) {
    table.setAttribute("role", "table");
    Array.prototype.forEach.call(table.rows, function (row) {
      row.setAttribute("role", "row");
      Array.prototype.forEach.call(row.cells, function (cell) {
        var head = cell.tagName === "TH";
        cell.setAttribute("role", !head ? "cell" : cell.parentNode.parentNode.tagName === "THEAD" ? "columnheader" : "rowheader");
      });
    });
  }

  function label(table) {
    var head = table.tHead && table.tHead.rows[0];
    if (!head) return;
    var names = [];
    Array.prototype.forEach.call(head.cells, function (th) {
      for (var k = 0; k < th.colSpan; k++) names.push(th.textContent.trim());
    });
    roles(table);
    Array.prototype.forEach.call(table.tBodies, function (body) {
      Array.prototype.forEach.call(body.rows, function (row) {
        var col = 0;
        Array.prototype.forEach.call(row.cells, function (cell) {
          if (cell.tagName === "TD" && names[col]) cell.setAttribute("data-label", names[col]);
          col += cell.colSpan;
        });
      });
    });
    table.classList.add("stacks");
  }

  function labelAll() {
    Array.prototype.forEach.call(document.querySelectorAll("main table"), label);
  }

  labelAll();
  var main = document.querySelector("main");
  if (!main || !window.MutationObserver) return;
  var queued = false;
  new MutationObserver(function (records) {
    var tables = records.some(function (r) {
      return Array.prototype.some.call(r.addedNodes, function (n) {
        return n.nodeType === 1 && (n.tagName === "TABLE" || n.tagName === "TR" || n.querySelector("table, tr"));
      });
    });
    if (!tables || queued) return;
    queued = true;
    // Once per batch of changes: the replay redraws its table on every step.
    window.requestAnimationFrame(function () { queued = false; labelAll(); });
  }).observe(main, { childList: true, subtree: true });
})();
