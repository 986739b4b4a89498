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
  // t is a message in the page's language: the catalogue the page
  // carries (board.html, not in English), else the English key; %d and
  // %s take args in order.
  var msgs = {};
  var msgsEl = document.getElementById("board-i18n");
  if (msgsEl) { try { msgs = JSON.parse(msgsEl.textContent) || {}; } catch (e) { msgs = {}; } }
  function t(key) {
    var args = Array.prototype.slice.call(arguments, 1);
    return (msgs[key] || key).replace(/%[ds]/g, function () { return String(args.shift()); });
  }
  var live = root.querySelector("[data-now]");
  if (live) { skew = Date.now() - Number(live.getAttribute("data-now")); }
  // fmt is the server's fmtAge (internal/web/board.go).
  function fmt(s) {
    s = Math.max(0, Math.round(s));
    if (s < 90) { return t("%d s", s); }
    if (s < 5400) { return t("%d min", Math.floor((s + 30) / 60)); }
    if (s < 172800) { return t("%d h %d min", Math.floor(s / 3600), Math.floor((s % 3600) / 60)); }
    return t("%d d %d h", Math.floor(s / 86400), Math.floor((s % 86400) / 3600));
  }
  function tick() {
    var now = Date.now() - skew;
    root.querySelectorAll("[data-t]").forEach(function (el) {
      el.textContent = fmt((now - Number(el.getAttribute("data-t"))) / 1000);
    });
  }
  tick();
  setInterval(tick, 1000);

  // A large board (board.go's bigBoard) has its groups as <details>: the
  // ones a viewer opened stay open across boards and visits (localStorage,
  // by the group's key), and the search box filters the rows, opening the
  // groups that match. Without the script the groups open by themselves.
  // The viewer's choices are kept here, apart from the markup, and given
  // to each new board: an update may come between a click, which opens
  // or closes a group at once, and its toggle event, which comes later
  // (on a group the update may have replaced), so each board is read for
  // choices before an update changes it.
  var openKey = "gpuacct.board.open";
  var query = "";
  // chosen: a group's key → open, the viewer's (the open ones kept across
  // visits); during: those chosen while a search shows, not kept.
  var chosen = {};
  var during = {};
  try {
    JSON.parse(localStorage.getItem(openKey) || "[]").forEach(function (k) { chosen[k] = true; });
  } catch (e) { chosen = {}; }
  // want is whether group g is open: the viewer's choice, else a
  // search's opening of the groups that match (apply hides the others).
  function want(g) {
    var k = g.getAttribute("data-key");
    if (query) { return Object.prototype.hasOwnProperty.call(during, k) ? during[k] : !g.hidden; }
    return chosen[k] === true;
  }
  // note takes as the viewer's choice each group of gs whose open state
  // is not the one it was given.
  function note(gs) {
    var kept = false;
    gs.forEach(function (g) {
      if (g.open === want(g)) { return; }
      (query ? during : chosen)[g.getAttribute("data-key")] = g.open;
      kept = kept || !query;
    });
    if (!kept) { return; }
    var keys = Object.keys(chosen).filter(function (k) { return chosen[k]; });
    try { localStorage.setItem(openKey, JSON.stringify(keys)); } catch (e) { /* private mode: not kept */ }
  }
  function groups() { return Array.prototype.slice.call(root.querySelectorAll("details.group")); }
  // terms reads "user alice job 12 gpu0" (or user:alice): each term a
  // field and a value; a bare value looks in every field.
  function terms(q) {
    var w = q.toLowerCase().split(/\s+/).filter(Boolean);
    var out = [];
    for (var i = 0; i < w.length; i++) {
      var m = w[i].match(/^(node|user|job|model):(.+)$/);
      if (m) {
        out.push({ f: m[1], v: m[2] });
      } else if (/^(node|user|job|model)$/.test(w[i]) && i + 1 < w.length) {
        out.push({ f: w[i], v: w[i + 1] });
        i++;
      } else {
        out.push({ f: "", v: w[i] });
      }
    }
    return out;
  }
  var attrOf = { node: "data-node", user: "data-users", job: "data-jobs", model: "data-model" };
  // matches: users and jobs match whole, nodes and models in part; a row
  // in full (a small board) is searched in its text.
  function matches(row, ts) {
    return ts.every(function (t) {
      return (t.f ? [t.f] : ["node", "user", "job", "model"]).some(function (f) {
        var a = row.getAttribute(attrOf[f]);
        if (a === null) { return row.textContent.toLowerCase().indexOf(t.v) >= 0; }
        a = a.toLowerCase();
        if (f === "user" || f === "job") { return (" " + a + " ").indexOf(" " + t.v + " ") >= 0; }
        return a.indexOf(t.v) >= 0;
      });
    });
  }
  function apply() {
    var ts = terms(query);
    var found = 0;
    root.querySelectorAll(".group").forEach(function (g) {
      var any = false;
      g.querySelectorAll(".node").forEach(function (row) {
        var ok = ts.length === 0 || matches(row, ts);
        row.hidden = !ok;
        if (ok) { any = true; found++; }
      });
      g.hidden = !any;
      if (g.tagName === "DETAILS") {
        g.open = want(g);
      }
    });
    var n = document.getElementById("board-q-n");
    if (n) { n.textContent = ts.length ? t("%d node(s) match", found) : ""; }
  }
  root.addEventListener("toggle", function (e) {
    if (e.target.matches && e.target.matches("details.group")) { note([e.target]); }
  }, true);
  var bar = document.createElement("div");
  bar.className = "board-search";
  bar.innerHTML = '<label for="board-q"></label> <input id="board-q" type="search" autocomplete="off"> <span id="board-q-n" role="status"></span>';
  bar.querySelector("label").textContent = t("Search");
  bar.querySelector("input").placeholder = t("node, user, job or model (user alice)");
  root.parentNode.insertBefore(bar, root);
  document.getElementById("board-q").addEventListener("input", function (e) {
    note(groups());
    query = e.target.value.trim();
    during = {};
    apply();
  });
  apply();
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
    note(groups());
    fn();
    apply();
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
        conn(t("live updates lost; reconnecting…"));
        return;
      }
      // The server refused the stream (503: too many, or stopping): the
      // browser gives up, so reopen it ourselves, waiting longer each time.
      es.close();
      var wait = backoff;
      backoff = Math.min(30, backoff * 2);
      conn(t("live updates stopped, the board below is not updated; retrying in %d s", wait));
      clearTimeout(retryTimer);
      retryTimer = setTimeout(open, wait * 1000);
    });
  }
  open();
})();
