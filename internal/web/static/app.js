// gpuacct dashboard: the little that needs a script. Pages work without it.
(function () {
  "use strict";
  // The period form leaves out empty fields, so links stay short.
  document.querySelectorAll("form.period").forEach(function (f) {
    f.addEventListener("submit", function () {
      f.querySelectorAll("input, select").forEach(function (el) {
        if (el.value === "") { el.disabled = true; }
      });
    });
  });
  // Click a column header to sort a table; numbers sort as numbers and a
  // missing value ("–") sorts last.
  function key(td) {
    var t = (td.textContent || "").trim();
    var n = t.replace(/,/g, "").match(/^-?\d+(\.\d+)?/);
    if (n && /^-?[\d,.]+(\s|%|$)/.test(t)) { return { n: parseFloat(n[0]) }; }
    if (t === "–" || t === "") { return { n: -Infinity, missing: true }; }
    return { s: t.toLowerCase() };
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.tHead ? table.tHead.rows[0].cells : [];
    Array.prototype.forEach.call(heads, function (th, col) {
      th.addEventListener("click", function () {
        // First click: largest first; the next one turns it round.
        var asc = th.getAttribute("aria-sort") === "descending";
        Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", asc ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = key(a.cells[col]), y = key(b.cells[col]), r;
          if (x.n !== undefined && y.n !== undefined) { r = x.n - y.n; }
          else { r = String(x.s || x.n).localeCompare(String(y.s || y.n)); }
          return asc ? r : -r;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
