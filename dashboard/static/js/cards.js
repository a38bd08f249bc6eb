/* Playing cards drawn as SVG: rank and suit in the corners, a large suit in the middle,
 * red hearts and diamonds, black clubs and spades, and a patterned back. The suit shapes
 * are paths (not font glyphs), so cards look the same on every machine. */
(function (root) {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var W = 60, H = 84;
  // Suit shapes in a 100 x 100 box.
  var SUIT_PATH = {
    h: "M50 92 C38 80 4 58 4 32 C4 14 18 4 31 4 C41 4 47 10 50 18 C53 10 59 4 69 4 C82 4 96 14 96 32 C96 58 62 80 50 92 Z",
    d: "M50 2 L88 50 L50 98 L12 50 Z",
    s: "M50 4 C62 22 96 40 96 62 C96 77 84 86 72 86 C64 86 58 82 54 76 C55 86 59 92 66 97 L34 97 C41 92 45 86 46 76 C42 82 36 86 28 86 C16 86 4 77 4 62 C4 40 38 22 50 4 Z",
    c: "M50 4 C63 4 72 14 72 26 C72 33 69 38 65 42 C68 40 72 39 76 39 C88 39 97 49 97 61 C97 73 88 83 76 83 C67 83 59 78 55 69 C56 82 60 90 67 97 L33 97 C40 90 44 82 45 69 C41 78 33 83 24 83 C12 83 3 73 3 61 C3 49 12 39 24 39 C28 39 32 40 35 42 C31 38 28 33 28 26 C28 14 37 4 50 4 Z"
  };

  function el(name, attrs, parent) {
    var node = document.createElementNS(NS, name);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function suit(parent, s, x, y, size) {
    var g = el("g", { transform: "translate(" + x + " " + y + ") scale(" + size / 100 + ")" }, parent);
    el("path", { d: SUIT_PATH[s], "class": "suit" }, g);
    return g;
  }

  function svg(klass, title) {
    var node = el("svg", { viewBox: "0 0 " + W + " " + H, "class": "card " + klass, role: "img" });
    if (title) {
      node.setAttribute("aria-label", title);
      el("title", {}, node).textContent = title;
    }
    return node;
  }

  var RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
  var SYMBOL = { c: "\u2663", d: "\u2666", h: "\u2665", s: "\u2660" };

  /* A card's notation ("10h", "Qs"), read for drawing only: the rules live on the server. */
  function parse(text) {
    var t = String(text).trim();
    var suit = t.slice(-1).toLowerCase(), r = t.slice(0, -1).toUpperCase();
    var rank = RANKS.indexOf(r === "T" ? "10" : r) + 1;
    if (rank < 1 || "cdhs".indexOf(suit) < 0) throw new Error("unknown card " + text);
    return { text: RANKS[rank - 1] + suit, rank: rank, suit: suit, red: suit === "d" || suit === "h" };
  }
  function label(text) { var c = parse(text); return RANKS[c.rank - 1] + SYMBOL[c.suit]; }

  /* A face-up card, e.g. face("10h"). */
  function face(text) {
    var c = parse(text);
    var rank = RANKS[c.rank - 1];
    var node = svg("face " + (c.red ? "red" : "black"), label(c.text));
    node.setAttribute("data-card", c.text);
    el("rect", { x: 0.75, y: 0.75, width: W - 1.5, height: H - 1.5, rx: 5, "class": "paper" }, node);
    var corner = function (g) {
      var t = el("text", { x: 8, y: 16, "class": "rank", "text-anchor": "middle" }, g);
      t.textContent = rank;
      if (rank === "10") t.setAttribute("class", "rank ten");  // two digits: narrower
      suit(g, c.suit, 3, 20, 10);
    };
    corner(el("g", {}, node));
    corner(el("g", { transform: "rotate(180 " + W / 2 + " " + H / 2 + ")" }, node));
    if (c.rank > 10) {
      el("rect", { x: 15, y: 17, width: 30, height: 50, rx: 3, "class": "court" }, node);
      var big = el("text", { x: W / 2, y: 39, "class": "court-rank", "text-anchor": "middle" }, node);
      big.textContent = rank;
      suit(node, c.suit, W / 2 - 8, 45, 16);
    } else {
      suit(node, c.suit, W / 2 - 14, H / 2 - 14, 28);
    }
    return node;
  }

  /* A face-down card. */
  function back(title) {
    var node = svg("back", title || "a face-down card");
    node.setAttribute("data-card", "back");
    el("rect", { x: 0.75, y: 0.75, width: W - 1.5, height: H - 1.5, rx: 5, "class": "back-edge" }, node);
    el("rect", { x: 5, y: 5, width: W - 10, height: H - 10, rx: 3, "class": "back-field" }, node);
    // A nested <svg> clips the lattice to the inner field.
    var field = el("svg", { x: 5, y: 5, width: W - 10, height: H - 10, viewBox: "0 0 " + (W - 10) + " " + (H - 10) }, node);
    var d = "";
    for (var i = -H; i < W; i += 7) d += "M" + i + " 0 L" + (i + H) + " " + H + " M" + (i + H) + " 0 L" + i + " " + H + " ";
    el("path", { d: d, "class": "back-lattice" }, field);
    el("rect", { x: 5, y: 5, width: W - 10, height: H - 10, rx: 3, "class": "back-frame" }, node);
    return node;
  }

  root.Cards = { face: face, back: back, label: label, W: W, H: H };
})(this);
