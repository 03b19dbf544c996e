// The page's only script: the copy button and the sortable table. It reads everything from the
// DOM (no data is embedded in script text, so no server string can break out of it) and makes
// no requests.
(function () {
  "use strict";

  // Copy button: the Clipboard API needs a secure context, which a file opened from disk may not
  // be; fall back to selecting the text and the legacy copy command.
  function copyText(button, el) {
    var text = el.textContent;
    function done(ok) {
      button.textContent = ok ? "Copied" : "Press Ctrl+C";
      setTimeout(function () { button.textContent = "Copy"; }, 1600);
    }
    function fallback() {
      var range = document.createRange();
      range.selectNodeContents(el);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      done(ok);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
    } else {
      fallback();
    }
  }
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    var el = document.getElementById(button.getAttribute("data-copy"));
    if (!el) { return; }
    button.hidden = false;
    button.addEventListener("click", function () { copyText(button, el); });
  });

  // Sorting: each cell carries its raw value in data-sort (empty for null). Nulls always sort
  // last, whatever the direction, so "—" rows never crowd the top.
  function sortKey(td, numeric) {
    var s = td ? td.getAttribute("data-sort") : null;
    if (s === null || s === "") { return null; }
    if (numeric) { var v = parseFloat(s); return isNaN(v) ? null : v; }
    return s;
  }
  function sortBy(table, index, numeric, dir) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = sortKey(a.cells[index], numeric), y = sortKey(b.cells[index], numeric);
      if (x === null && y === null) { return 0; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      var c = numeric ? x - y : String(x).localeCompare(String(y));
      return c * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, index) {
      var button = th.querySelector("button");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var dir = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (h) { h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", dir === 1 ? "ascending" : "descending");
        sortBy(table, index, th.getAttribute("data-type") === "num", dir);
      });
    });
  });
})();
