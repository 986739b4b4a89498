// gpuacct live board: takes the board the server sends (server-sent
// events: the whole fragment first, then the sections that changed) and
// ticks every age between them. The page works without it: it then
// reloads itself (<noscript> refresh).
(function () {
  "use strict";
  var root = document.getElementById("board");
  if (!root) { return; }
  // skew is the browser's clock minus the server's: from the time the
  // page was rendered, then from the server's time sent on the stream
  // (never from the board's build time, which may be old).
  var skew = 0;
  var live = root.querySelector("[data-now]");
  if (live) { skew = Date.now() - Number(live.getAttribute("data-now")); }
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
  tick();
  setInterval(tick, 1000);
  if (!window.EventSource) { return; }
  function conn(text) {
    var el = document.getElementById("board-conn");
    if (!el) { return; }
    el.hidden = !text;
    el.textContent = text || "";
  }
  // swap runs fn keeping the keyboard where it was: the cells keep their
  // ids across a board.
  function swap(fn) {
    var focused = document.activeElement && root.contains(document.activeElement) ? document.activeElement.id : "";
    fn();
    tick();
    root.setAttribute("data-updated", String(Date.now()));
    if (focused) {
      var el = document.getElementById(focused);
      if (el) { el.focus({ preventScroll: true }); }
    }
    conn("");
  }
  var es = null;
  var backoff = 1;
  var retryTimer = 0;
  function open() {
    es = new EventSource("/api/v1/board/events");
    es.addEventListener("now", function (e) {
      skew = Date.now() - Number(e.data);
      backoff = 1;
      conn("");
    });
    es.addEventListener("board", function (e) {
      backoff = 1;
      swap(function () { root.innerHTML = e.data; });
    });
    es.addEventListener("nodes", function (e) {
      backoff = 1;
      var t = document.createElement("template");
      t.innerHTML = e.data;
      var lost = false;
      swap(function () {
        Array.prototype.slice.call(t.content.children).forEach(function (el) {
          var old = el.id ? document.getElementById(el.id) : null;
          if (old && root.contains(old)) { old.replaceWith(el); } else { lost = true; }
        });
      });
      // A section the page lacks: start again from the whole board.
      if (lost) { es.close(); open(); }
    });
    es.addEventListener("error", function () {
      if (es.readyState !== EventSource.CLOSED) {
        conn("live updates lost; reconnecting…");
        return;
      }
      // The server refused the stream (503: too many, or stopping): the
      // browser gives up, so reopen it ourselves, waiting longer each time.
      es.close();
      var wait = backoff;
      backoff = Math.min(30, backoff * 2);
      conn("live updates stopped, the board below is not updated; retrying in " + wait + " s");
      clearTimeout(retryTimer);
      retryTimer = setTimeout(open, wait * 1000);
    });
  }
  open();
})();
