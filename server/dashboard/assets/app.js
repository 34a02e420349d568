// The dashboard's only script: confirmations, times in the viewer's time
// zone, the live overview and queue pages (polling /live.json, one
// snapshot shared by every viewer on the server) and a running job's
// progress (its page reloads). Every page works without it, with times in
// UTC and no live updates.
(function () {
  "use strict";

  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  });

  var pad = function (n) { return (n < 10 ? "0" : "") + n; };
  var hhmm = function (d) { return pad(d.getHours()) + ":" + pad(d.getMinutes()); };
  var fullTime = function (d) {
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + hhmm(d) + ":" + pad(d.getSeconds());
  };
  var tz = (Intl.DateTimeFormat().resolvedOptions().timeZone) || "local time";

  // Server-rendered times are UTC inside <time datetime>; show them local.
  document.querySelectorAll("time[datetime]").forEach(function (t) {
    var d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d.getTime())) {
      t.title = t.textContent;
      t.textContent = fullTime(d);
    }
  });

  // A running job's page with progress reloads itself every 2 s, the
  // live pages' poll, while the job runs: the server renders the latest
  // report, written at most once a second.
  if (document.querySelector("#progress[data-refresh]")) {
    setTimeout(function () { window.location.reload(); }, 2000);
  }

  var live = document.getElementById("live");
  if (!live) {
    return;
  }
  var tzEl = document.getElementById("tz");
  if (tzEl) {
    tzEl.textContent = tz;
  }

  var el = function (tag, attrs, text) {
    var ns = "http://www.w3.org/2000/svg";
    var svgTags = { g: 1, rect: 1, line: 1, text: 1, title: 1, polyline: 1, circle: 1, path: 1 };
    var n = svgTags[tag] ? document.createElementNS(ns, tag) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    if (text !== undefined) {
      n.textContent = text;
    }
    return n;
  };
  var secs = function (s) {
    s = Math.round(s);
    if (s < 60) { return s + "s"; }
    if (s < 3600) { return Math.floor(s / 60) + "m" + (s % 60) + "s"; }
    return Math.floor(s / 3600) + "h" + Math.floor((s % 3600) / 60) + "m" + (s % 60) + "s";
  };
  // rate is the share of attempts that failed (for good or retried), as
  // sluice.Figures.FailedAttemptShare defines it.
  var rate = function (failed, done) {
    var all = failed + done;
    return all ? (100 * failed / all).toFixed(1) + "%" : "—";
  };
  var perMin = function (n, minutes) { return (n / minutes).toFixed(2) + "/min"; };
  // wait shows a queue latency's p50 / p95 as the server's wait does.
  var wait = function (l) {
    if (!l) { return "—"; }
    var d = function (s) {
      if (s < 1) { return Math.round(s * 1000) + "ms"; }
      return s < 60 ? s.toFixed(1) + "s" : secs(s);
    };
    return d(l.p50_s) + " / " + d(l.p95_s);
  };
  // niceStep is the smallest 1, 2 or 5 times a power of ten at or above
  // x, so that axis ticks fall on round numbers.
  var niceStep = function (x) {
    if (x <= 0) { return 1; }
    var p = Math.pow(10, Math.floor(Math.log10(x)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * p >= x) { return steps[i] * p; }
    }
    return 10 * p;
  };

  var tip = document.getElementById("tip");
  var showTip = function (e, text) {
    if (!tip) { return; }
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = (e.pageX + 12) + "px";
    tip.style.top = (e.pageY + 12) + "px";
  };
  var hideTip = function () { if (tip) { tip.hidden = true; } };

  // W x H plot area inside the viewBox, with room for the axes.
  var W = 640, H = 200, L = 52, R = 12, T = 12, B = 42;
  var pw = W - L - R, ph = H - T - B;

  // axes draws the y grid and labels (ticks of 0..max) and the x labels
  // (every labelEvery buckets), with both axis titles.
  var axes = function (svg, n, start, step, labelEvery, max, ticks, yTitle, yFmt) {
    for (var i = 0; i <= ticks; i++) {
      var v = max * i / ticks, y = T + ph - ph * i / ticks;
      svg.appendChild(el("line", { x1: L, x2: W - R, y1: y, y2: y, "class": i ? "grid" : "axis" }));
      svg.appendChild(el("text", { x: L - 6, y: y + 4, "text-anchor": "end", "class": "tick" }, yFmt(v)));
    }
    var bw = pw / n;
    for (var j = 0; j < n; j += labelEvery) {
      var x = L + j * bw;
      svg.appendChild(el("line", { x1: x, x2: x, y1: T + ph, y2: T + ph + 4, "class": "axis" }));
      svg.appendChild(el("text", { x: x, y: T + ph + 16, "text-anchor": "middle", "class": "tick" }, hhmm(new Date(start + j * step))));
    }
    svg.appendChild(el("text", { x: L + pw / 2, y: H - 6, "text-anchor": "middle", "class": "axis-title" }, "time (" + tz + ")"));
    svg.appendChild(el("text", { x: 12, y: T + ph / 2, "text-anchor": "middle", "class": "axis-title", transform: "rotate(-90 12 " + (T + ph / 2) + ")" }, yTitle));
  };

  var clear = function (svg) { while (svg.firstChild) { svg.removeChild(svg.firstChild); } };

  var bucketText = function (start, step, i) {
    return hhmm(new Date(start + i * step)) + "–" + hhmm(new Date(start + (i + 1) * step));
  };

  // hover adds, per bucket, a full-height target with a title and the
  // floating readout.
  var hover = function (svg, n, text) {
    var bw = pw / n;
    for (var i = 0; i < n; i++) {
      var r = el("rect", { x: L + i * bw, y: T, width: bw, height: ph, "class": "hit", "data-i": i });
      var t = text(i);
      r.appendChild(el("title", {}, t));
      r.addEventListener("mousemove", (function (t) { return function (e) { showTip(e, t); }; })(t));
      r.addEventListener("mouseleave", hideTip);
      svg.appendChild(r);
    }
  };

  var bars = function (svg, start, step, done, failed, labelEvery, unit) {
    clear(svg);
    var n = done.length, max = 0;
    for (var i = 0; i < n; i++) { max = Math.max(max, done[i] + failed[i]); }
    // Whole-number ticks: at most four steps of a round size (at least 1).
    var tick = Math.max(1, niceStep(max / 4)), ticks = Math.max(1, Math.ceil(max / tick));
    max = tick * ticks;
    axes(svg, n, start, step, labelEvery, max, ticks, "attempts per " + unit, function (v) { return String(Math.round(v)); });
    var bw = pw / n;
    for (var k = 0; k < n; k++) {
      var hd = ph * done[k] / max, hf = ph * failed[k] / max, x = L + k * bw + 1;
      if (hd > 0) { svg.appendChild(el("rect", { x: x, y: T + ph - hd - hf, width: Math.max(bw - 2, 1), height: hd, "class": "ok" })); }
      if (hf > 0) { svg.appendChild(el("rect", { x: x, y: T + ph - hf, width: Math.max(bw - 2, 1), height: hf, "class": "bad" })); }
    }
    hover(svg, n, function (i) { return bucketText(start, step, i) + ": " + done[i] + " done, " + failed[i] + " failed"; });
  };

  var rateLine = function (svg, start, step, done, failed, labelEvery) {
    clear(svg);
    var n = done.length, bw = pw / n, pts = [];
    axes(svg, n, start, step, labelEvery, 100, 4, "failed attempts (%)", function (v) { return v + "%"; });
    var flush = function () {
      if (pts.length > 1) { svg.appendChild(el("polyline", { points: pts.join(" "), "class": "rate" })); }
      pts = [];
    };
    for (var i = 0; i < n; i++) {
      var all = done[i] + failed[i];
      if (!all) { flush(); continue; }
      var x = L + (i + 0.5) * bw, y = T + ph - ph * failed[i] / all;
      pts.push(x + "," + y);
      svg.appendChild(el("circle", { cx: x, cy: y, r: 2.5, "class": "rate" }));
    }
    flush();
    hover(svg, n, function (i) {
      return bucketText(start, step, i) + ": " + rate(failed[i], done[i]) + " failed (" + (done[i] + failed[i]) + " attempts)";
    });
  };

  var setText = function (row, f, v) {
    var c = row.querySelector('[data-f="' + f + '"]');
    if (c && c.textContent !== String(v)) { c.textContent = v; }
  };

  var fillTable = function (id, rows, cells, empty) {
    var tbody = document.querySelector("#" + id + " tbody");
    if (!tbody) { return; }
    var out = document.createDocumentFragment();
    rows.forEach(function (r) {
      var tr = el("tr");
      cells(r).forEach(function (c) {
        var td = el("td", c.f ? { "data-f": c.f } : {});
        if (c.href) { td.appendChild(el("a", { href: c.href }, c.text)); } else { td.textContent = c.text; }
        tr.appendChild(td);
      });
      tr.setAttribute("data-" + (id === "types" ? "type" : "queue"), id === "types" ? r.type : r.queue);
      out.appendChild(tr);
    });
    if (!rows.length) {
      var tr = el("tr");
      tr.appendChild(el("td", { colspan: 10, "class": "empty" }, empty));
      out.appendChild(tr);
    }
    tbody.replaceChildren(out);
  };

  var snap = null;
  var picker = document.getElementById("chart-type");

  var drawCharts = function () {
    var t = picker ? picker.value : "";
    var s = snap.series[t] || snap.series[""];
    var minute = 60000, hour = 3600000;
    bars(document.getElementById("chart-hour"), snap.hour_start, minute, s.hour_done, s.hour_failed, 10, "minute");
    bars(document.getElementById("chart-day"), snap.day_start, hour, s.day_done, s.day_failed, 3, "hour");
    rateLine(document.getElementById("rate-hour"), snap.hour_start, minute, s.hour_done, s.hour_failed, 10);
    rateLine(document.getElementById("rate-day"), snap.day_start, hour, s.day_done, s.day_failed, 3);
  };

  var renderOverview = function () {
    fillTable("queues", snap.queues, function (q) {
      return [{ text: q.queue, href: "/jobs?queue=" + encodeURIComponent(q.queue) }, { text: q.pending, f: "pending" },
        { text: q.processing, f: "processing" }, { text: q.failed, f: "failed" }, { text: secs(q.oldest_pending_age_s), f: "oldest" },
        { text: q["1h"].done }, { text: q["1h"].failed }, { text: q["1h"].retried },
        { text: q["24h"].done }, { text: q["24h"].failed }, { text: q["24h"].retried }, { text: q.paused ? "paused" : "running" }];
    }, "No queues yet: no live jobs and no finished ones in the last day.");
    fillTable("types", snap.types, function (t) {
      var h = t["1h"], d = t["24h"];
      return [{ text: t.type, href: "/jobs?type=" + encodeURIComponent(t.type) }, { text: h.done }, { text: h.failed }, { text: h.retried },
        { text: rate(h.failed + h.retried, h.done) }, { text: perMin(h.done + h.failed + h.retried, 60) }, { text: wait(t.latency_1h) },
        { text: d.done }, { text: d.failed }, { text: d.retried }, { text: rate(d.failed + d.retried, d.done) },
        { text: perMin(d.done + d.failed + d.retried, 1440) }, { text: wait(t.latency_24h) }];
    }, "No finished jobs in the last day.");
    if (picker) {
      var have = {};
      Array.prototype.forEach.call(picker.options, function (o) { have[o.value] = true; });
      snap.types.forEach(function (t) { if (!have[t.type]) { picker.appendChild(el("option", { value: t.type }, t.type)); } });
    }
    drawCharts();
  };

  // The queue page keeps its forms: only the counts of known rows change.
  var renderQueues = function () {
    snap.queues.forEach(function (q) {
      document.querySelectorAll("#queues tr[data-queue]").forEach(function (row) {
        if (row.getAttribute("data-queue") !== q.queue) { return; }
        setText(row, "pending", q.pending);
        setText(row, "processing", q.processing);
        setText(row, "failed", q.failed);
        setText(row, "oldest", secs(q.oldest_pending_age_s));
        setText(row, "state", q.paused ? "paused" : "running");
      });
    });
  };

  var render = live.hasAttribute("data-live") ? renderOverview : renderQueues;
  if (live.hasAttribute("data-live")) {
    snap = JSON.parse(live.getAttribute("data-live"));
    render();
    if (picker) { picker.addEventListener("change", drawCharts); }
    document.querySelectorAll("#types").forEach(function (tbl) {
      tbl.addEventListener("click", function (e) {
        var tr = e.target.closest("tr[data-type]");
        if (tr && picker && e.target.tagName !== "A") { picker.value = tr.getAttribute("data-type"); drawCharts(); }
      });
    });
  }

  var state = document.getElementById("live-state");
  var poll = function () {
    if (document.hidden) {
      return;
    }
    fetch(live.getAttribute("data-src") || "/live.json", { credentials: "same-origin", headers: { Accept: "application/json" } }).then(function (r) {
      if (!r.ok) { throw new Error("HTTP " + r.status); }
      return r.json();
    }).then(function (s) {
      snap = s;
      render();
      live.setAttribute("data-updated", String(s.at));
      if (state) { state.textContent = "Live"; state.className = ""; }
    }).catch(function () {
      if (state) { state.textContent = "Disconnected"; state.className = "error"; }
    });
  };
  setInterval(poll, 2000);
  document.addEventListener("visibilitychange", poll);
})();
