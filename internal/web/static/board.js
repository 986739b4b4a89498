// gpuacct live board: swaps in each board the server sends (server-sent
// events, one rendered fragment) and ticks the ages between them. The
// page works without it: it then reloads itself (<noscript> refresh).
(function () {
  "use strict";
  var root = document.getElementById("board");
  if (!root) { return; }
  // skew is the browser's clock minus the server's, from the board's time.
  var skew = 0;
  function sync() {
    var live = root.querySelector("[data-at]");
    if (live) { skew = Date.now() - Number(live.getAttribute("data-at")); }
  }
  // fmt is the server's fmtAge (internal/web/board.go).
  function fmt(s) {
    s = Math.max(0, Math.round(s));
    if (s < 90) { return s + " s"; }
    if (s < 5400) { return Math.floor((s + 30) / 60) + " min"; }
    if (s < 172800) { return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min"; }
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }
  function tick() {
    var now = Date.now() - skew;
    root.querySelectorAll("[data-t]").forEach(function (el) {
      el.textContent = fmt((now - Number(el.getAttribute("data-t"))) / 1000);
    });
  }
  sync();
  setInterval(tick, 1000);
  if (!window.EventSource) { return; }
  function conn(text) {
    var el = document.getElementById("board-conn");
    if (!el) { return; }
    el.hidden = !text;
    el.textContent = text || "";
  }
  var es = new EventSource("/api/v1/board/events");
  es.addEventListener("board", function (e) {
    // Keep the keyboard where it was: the cells keep their ids.
    var focused = document.activeElement && root.contains(document.activeElement) ? document.activeElement.id : "";
    root.innerHTML = e.data;
    sync();
    tick();
    root.setAttribute("data-updated", String(Date.now()));
    if (focused) {
      var el = document.getElementById(focused);
      if (el) { el.focus({ preventScroll: true }); }
    }
    conn("");
  });
  es.addEventListener("error", function () { conn("live updates lost; reconnecting…"); });
})();
