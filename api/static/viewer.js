/* optsched plan viewer: interactive charts drawn from the JSON the page embeds (<script id="chart-data">, built by
   api/pages.py). Needs Chart.js, Hammer.js and chartjs-plugin-zoom loaded before it (api/static/vendor). Text from
   the data only ever goes into textContent; styles only through element.style (the page's CSP allows no inline
   style or script). Without this script the page shows the same charts as PNG and the same facts in its tables. */
(function () {
  "use strict";

  var source = document.getElementById("chart-data");
  if (!source || typeof Chart === "undefined") return;
  var DATA = JSON.parse(source.textContent);

  var PRIORITIES = ["critical", "high", "normal", "low"];
  var COLOURS = { critical: "#d62728", high: "#ff7f0e", normal: "#1f77b4", low: "#7f7f7f" };
  var RESTART = "#c9b8e8";
  var DOWN = "#4d4d4d";
  var IDLE = "#e6e6e6";
  var Y_AXIS_WIDTH = 78;  // the night's two charts share their x axis: the same width left of it lines them up
  var DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", sans-serif';
  Chart.defaults.font.size = 12;
  Chart.defaults.color = "#333";
  Chart.defaults.animation = false;

  // -- small helpers ---------------------------------------------------------------------------------------------

  function make(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === "text") node.textContent = props[k];
      else if (k === "className") node.className = props[k];
      else node.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (c) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }

  function watts(v) { return v === null || v === undefined ? "—" : Math.round(v).toLocaleString("en-US") + " W"; }
  function num(v, digits) { return v === null || v === undefined ? "—" : Number(v.toPrecision(digits || 4)).toLocaleString("en-US"); }
  function pad(n) { return (n < 10 ? "0" : "") + n; }

  function duration(hours) {
    var minutes = Math.round(hours * 60);
    return minutes < 60 ? minutes + " min" : Math.floor(minutes / 60) + " h " + pad(minutes % 60) + " min";
  }

  /* A diagonal-stripe fill (devices down), drawn on a small canvas of its own. */
  function stripes(hex) {
    var tile = document.createElement("canvas");
    tile.width = tile.height = 8;
    var c = tile.getContext("2d");
    c.fillStyle = fade(hex, 0.25);
    c.fillRect(0, 0, 8, 8);
    c.strokeStyle = hex;
    c.lineWidth = 1.5;
    c.beginPath();
    c.moveTo(0, 8); c.lineTo(8, 0); c.moveTo(-2, 2); c.lineTo(2, -2); c.moveTo(6, 10); c.lineTo(10, 6);
    c.stroke();
    return c.createPattern(tile, "repeat");
  }

  function fade(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  /* Hours after the night starts as its wall-clock time: the start is given as a UTC epoch of its wall time, so
     UTC arithmetic shows the night's own clock in any browser time zone. Rounded to the minute as the tables are. */
  function Clock(startMs) {
    this.startMs = startMs;
    this.startMinute = Math.floor(startMs / 60000) % 1440 + (startMs % 60000) / 60000;
    this.startDay = this.day(0);
  }
  Clock.prototype.at = function (hours) { return new Date(this.startMs + hours * 3600000 + 30000); };
  Clock.prototype.hhmm = function (hours) { var d = this.at(hours); return pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()); };
  Clock.prototype.day = function (hours) {
    var d = this.at(hours);
    return DAYS[d.getUTCDay()] + " " + d.getUTCDate() + " " + MONTHS[d.getUTCMonth()];
  };
  Clock.prototype.text = function (hours) {
    if (hours === null || hours === undefined) return "—";
    var day = this.day(hours);
    return this.hhmm(hours) + (day === this.startDay ? "" : " (" + day + ")");
  };
  /* Axis ticks on round clock times (every 5 min ... 1 day, about ten across the visible span). */
  Clock.prototype.ticks = function (scale) {
    var span = (scale.max - scale.min) * 60;
    var steps = [5, 10, 15, 30, 60, 120, 180, 240, 360, 720, 1440];
    var step = steps.filter(function (s) { return span / s <= 10; })[0] || 1440;
    var first = Math.ceil((this.startMinute + scale.min * 60) / step - 1e-9) * step;
    var ticks = [];
    for (var m = first; m <= this.startMinute + scale.max * 60 + 1e-6; m += step) {
      ticks.push({ value: (m - this.startMinute) / 60 });
    }
    scale.ticks = ticks;
  };
  Clock.prototype.tickLabel = function (value, index, ticks) {
    var day = this.day(value);
    var previous = index > 0 ? this.day(ticks[index - 1].value) : null;
    return day !== previous ? [this.hhmm(value), day] : this.hhmm(value);
  };

  /* The hover box of a chart: a title and lines of text, placed beside the pointer inside the chart's box. */
  function Tip(box, id) {
    this.box = box;
    this.node = make("div", { className: "chart-tip", id: id, role: "status" });
    this.node.hidden = true;
    box.appendChild(this.node);
  }
  Tip.prototype.show = function (x, y, title, lines) {
    var node = this.node;
    node.replaceChildren(make("strong", { text: title }));
    lines.forEach(function (line) { node.appendChild(make("div", { text: line })); });
    node.hidden = false;
    var width = node.offsetWidth, height = node.offsetHeight;
    var left = x + 14 + width > this.box.clientWidth ? Math.max(0, x - 14 - width) : x + 14;
    var top = Math.max(0, Math.min(y + 14, this.box.clientHeight - height));
    node.style.left = left + "px";
    node.style.top = top + "px";
  };
  Tip.prototype.hide = function () { this.node.hidden = true; };

  /* Filters by priority and job (substring of the id, or the exact id when one is typed), over the charts and the
     table rows with data-index. `apply(visible)` receives the set of the visible jobs' indices. */
  function Filter(tools, prefix, jobs, table, apply) {
    var present = PRIORITIES.filter(function (p) { return jobs.some(function (j) { return j.priority === p; }); });
    var priority = make("select", { id: prefix + "-priority" }, [make("option", { value: "", text: "every priority" })]);
    present.forEach(function (p) { priority.appendChild(make("option", { value: p, text: p })); });
    var list = make("datalist", { id: prefix + "-jobs" });
    jobs.forEach(function (j) { list.appendChild(make("option", { value: j.id })); });
    var job = make("input", { id: prefix + "-job", type: "search", list: prefix + "-jobs", placeholder: "every job",
                              autocomplete: "off", size: "18" });
    var count = make("span", { className: "note", id: prefix + "-shown" });
    var clear = make("button", { type: "button", id: prefix + "-clear", text: "show all" });
    tools.appendChild(make("label", {}, ["priority ", priority]));
    tools.appendChild(make("label", {}, ["job ", job, list]));
    tools.appendChild(clear);
    tools.appendChild(count);
    var rows = table ? table.querySelectorAll("tbody tr[data-index]") : [];

    function update() {
      var p = priority.value, q = job.value.trim().toLowerCase();
      var exact = jobs.some(function (j) { return j.id.toLowerCase() === q; });
      var visible = new Set();
      jobs.forEach(function (j, k) {
        var id = j.id.toLowerCase();
        if ((!p || j.priority === p) && (!q || (exact ? id === q : id.indexOf(q) >= 0))) visible.add(k);
      });
      Array.prototype.forEach.call(rows, function (row) { row.hidden = !visible.has(Number(row.dataset.index)); });
      count.textContent = visible.size === jobs.length ? jobs.length + " jobs" : visible.size + " of " + jobs.length + " jobs shown";
      apply(visible);
    }
    priority.addEventListener("change", update);
    job.addEventListener("input", update);
    clear.addEventListener("click", function () { priority.value = ""; job.value = ""; update(); });
    this.update = update;
  }

  /* Zoom buttons and the hint; `charts` share the x range (zooming or panning one moves the others). */
  function zoomTools(tools, prefix, charts) {
    function each(f) { charts.forEach(f); }
    var zoomIn = make("button", { type: "button", id: prefix + "-zoom-in", text: "zoom in" });
    var zoomOut = make("button", { type: "button", id: prefix + "-zoom-out", text: "zoom out" });
    var reset = make("button", { type: "button", id: prefix + "-zoom-reset", text: "whole range" });
    zoomIn.addEventListener("click", function () { charts[0].zoom({ x: 1.5 }); sync(charts[0]); });
    zoomOut.addEventListener("click", function () { charts[0].zoom({ x: 1 / 1.5 }); sync(charts[0]); });
    reset.addEventListener("click", function () { each(function (c) { c.resetZoom(); }); });
    tools.appendChild(make("span", { className: "group" }, [zoomIn, zoomOut, reset]));
    tools.appendChild(make("span", { className: "note", text: "drag to pan · ctrl + wheel or shift + drag to zoom" }));

    function sync(from) {
      var x = from.scales.x;
      each(function (c) { if (c !== from) c.zoomScale("x", { min: x.min, max: x.max }, "none"); });
    }
    return sync;
  }

  function zoomOptions(min, max, minRange, sync) {
    var done = function (ctx) { if (sync) sync(ctx.chart); };
    return {
      limits: { x: { min: min, max: max, minRange: minRange } },
      pan: { enabled: true, mode: "x", onPanComplete: done },
      zoom: {
        mode: "x",
        wheel: { enabled: true, modifierKey: "ctrl" },
        pinch: { enabled: true },
        drag: { enabled: true, modifierKey: "shift", backgroundColor: "rgba(31,119,180,0.15)" },
        onZoomComplete: done
      }
    };
  }

  /* Labels inside horizontal bars wide enough for them; clipped to the plot area. */
  var barLabels = {
    id: "barLabels",
    afterDatasetsDraw: function (chart, args, options) {
      if (!options.text) return;
      var ctx = chart.ctx, area = chart.chartArea;
      ctx.save();
      ctx.beginPath();
      ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top);
      ctx.clip();
      ctx.font = "11px " + Chart.defaults.font.family;
      ctx.textBaseline = "middle";
      chart.data.datasets.forEach(function (dataset, d) {
        var meta = chart.getDatasetMeta(d);
        if (meta.hidden || !chart.isDatasetVisible(d)) return;
        meta.data.forEach(function (bar, i) {
          var texts = [].concat(options.text(dataset.data[i], dataset) || []);  // longest first
          var left = Math.max(Math.min(bar.x, bar.base), area.left), right = Math.min(Math.max(bar.x, bar.base), area.right);
          var text = texts.filter(function (t) { return right - left >= ctx.measureText(t).width + 8; })[0];
          if (!text || bar.height < 11) return;
          ctx.fillStyle = options.colour ? options.colour(dataset) : "#fff";
          ctx.fillText(text, left + 4, bar.y);
        });
      });
      ctx.restore();
    }
  };

  /* Vertical marks (night end, deadlines of a filtered job, frontier budgets), bands (power windows), group lines. */
  var marks = {
    id: "marks",
    beforeDatasetsDraw: function (chart, args, options) {
      var ctx = chart.ctx, area = chart.chartArea, x = chart.scales.x;
      ctx.save();
      ctx.beginPath();
      ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top);
      ctx.clip();
      (options.bands || []).forEach(function (b) {
        var a = x.getPixelForValue(b.from), z = x.getPixelForValue(b.to);
        ctx.fillStyle = "rgba(255, 196, 0, 0.16)";
        ctx.fillRect(a, area.top, z - a, area.bottom - area.top);
        ctx.fillStyle = "#7a5c00";
        ctx.font = "11px " + Chart.defaults.font.family;
        ctx.textBaseline = "bottom";
        ctx.fillText(b.label, Math.max(a, area.left) + 4, area.bottom - 3);
      });
      (options.rules || []).forEach(function (first) {
        var y = chart.scales.y, p = (y.getPixelForValue(first - 1) + y.getPixelForValue(first)) / 2;
        ctx.strokeStyle = "#999";
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(area.left, p);
        ctx.lineTo(area.right, p);
        ctx.stroke();
      });
      ctx.restore();
    },
    afterDatasetsDraw: function (chart, args, options) {
      var ctx = chart.ctx, area = chart.chartArea, x = chart.scales.x;
      ctx.save();
      ctx.beginPath();
      ctx.rect(area.left, area.top, area.right - area.left, area.bottom - area.top);
      ctx.clip();
      ctx.font = "11px " + Chart.defaults.font.family;
      ctx.textBaseline = "top";
      var levels = [];  // right edge of the last label on each line of labels, so that close marks do not overlap
      (options.lines || []).slice().sort(function (a, b) { return a.at - b.at; }).forEach(function (line) {
        var p = x.getPixelForValue(line.at);
        ctx.strokeStyle = line.colour || "#222";
        ctx.lineWidth = 1.2;
        ctx.setLineDash(line.dash || [5, 4]);
        ctx.beginPath();
        ctx.moveTo(p, area.top);
        ctx.lineTo(p, area.bottom);
        ctx.stroke();
        ctx.setLineDash([]);
        if (!line.label || p < area.left || p > area.right) return;
        var width = ctx.measureText(line.label).width + 6;
        var left = Math.min(p + 3, area.right - width);
        var level = 0;
        while (levels[level] !== undefined && levels[level] > left) level++;
        levels[level] = left + width;
        ctx.fillStyle = "rgba(255,255,255,0.85)";
        ctx.fillRect(left - 1, area.top + 2 + 14 * level, width, 14);
        ctx.fillStyle = line.colour || "#222";
        ctx.fillText(line.label, left + 2, area.top + 3 + 14 * level);
      });
      (options.ticks || []).forEach(function (t) {
        if (t.dataset !== undefined && !chart.isDatasetVisible(t.dataset)) return;
        var p = x.getPixelForValue(t.at), y = chart.scales.y.getPixelForValue(t.row), h = t.height || 12;
        ctx.strokeStyle = t.colour;
        ctx.lineWidth = 2.5;
        ctx.beginPath();
        ctx.moveTo(p, y - h / 2);
        ctx.lineTo(p, y + h / 2);
        ctx.stroke();
      });
      if (options.cursor !== null && options.cursor !== undefined) {
        var c = x.getPixelForValue(options.cursor);
        ctx.strokeStyle = "rgba(0,0,0,0.45)";
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(c, area.top);
        ctx.lineTo(c, area.bottom);
        ctx.stroke();
      }
      ctx.restore();
    }
  };

  function showLive(id) { document.getElementById(id).hidden = false; }

  /* Legend entries in each dataset's own colour (`legendColour`), not in its first bar's, which hovering fades. */
  function legend() {
    return {
      position: "bottom",
      labels: {
        boxWidth: 14,
        generateLabels: function (chart) {
          return Chart.defaults.plugins.legend.labels.generateLabels(chart).map(function (item) {
            var colour = chart.data.datasets[item.datasetIndex].legendColour;
            if (colour) item.fillStyle = colour;
            return item;
          });
        }
      }
    };
  }

  // -- the night: timeline and power -----------------------------------------------------------------------------

  function nightPage(d) {
    showLive("night-live");
    var clock = new Clock(d.startMs);
    var jobs = d.jobs, segments = d.segments, rows = d.rows;
    var hot = null, visible = null;
    var lastRows = jobs.map(function () { return []; });
    var lastSegment = jobs.map(function () { return -1; });
    segments.forEach(function (s, k) { lastSegment[s.job] = k; });
    d.bars.forEach(function (b) { if (lastSegment[segments[b.seg].job] === b.seg) lastRows[segments[b.seg].job].push(b.row); });

    function points(filter) {
      var byKind = {};
      PRIORITIES.concat(["restart"]).forEach(function (k) { byKind[k] = []; });
      d.bars.forEach(function (b) {
        var s = segments[b.seg], j = jobs[s.job];
        if (filter && !filter.has(s.job)) return;
        var kind = s.restart ? "restart" : (byKind[j.priority] ? j.priority : "low");
        byKind[kind].push({ x: [s.from, s.to], y: rows[b.row], job: s.job, seg: b.seg, row: b.row, cap: b.cap });
      });
      return byKind;
    }

    function colourOf(kind) { return kind === "restart" ? RESTART : COLOURS[kind]; }
    function background(kind) {
      return function (ctx) {
        var raw = ctx.raw, colour = colourOf(kind);
        return hot !== null && raw && raw.job !== hot ? fade(colour, 0.4) : colour;
      };
    }
    var byKind = points(null);
    // Legend entries only: the deadline ticks the `marks` plugin draws (hidden with them by a click on the entry).
    var deadlineKeys = [["deadline met", "#1a7f37"], ["deadline missed", "#c00000"]].map(function (k) {
      return { label: k[0], kind: k[0], data: [], backgroundColor: k[1], borderColor: k[1] };
    });
    var datasets = PRIORITIES.concat(["restart"]).map(function (kind) {
      return {
        label: kind === "restart" ? "restart (devices held, no progress)" : kind,
        kind: kind,
        legendColour: colourOf(kind),
        data: byKind[kind],
        backgroundColor: background(kind),
        borderColor: "rgba(0,0,0,0.55)",
        borderWidth: 0.6,
        borderSkipped: false,
        grouped: false,
        barPercentage: 0.82,
        categoryPercentage: 1.0
      };
    });
    datasets.push({
      label: "device down", kind: "down", grouped: false, barPercentage: 0.82, categoryPercentage: 1.0,
      backgroundColor: stripes(DOWN), borderColor: DOWN, borderWidth: 0.6, borderSkipped: false,
      data: d.down.map(function (x) { return { x: [x.from, x.to], y: rows[x.row], down: true, row: x.row }; })
    });
    deadlineKeys.forEach(function (k) { datasets.push(k); });

    function deadlineMarks(filter) {
      var ticks = [], lines = [];
      jobs.forEach(function (j, k) {
        if (j.deadline === null || (filter && !filter.has(k))) return;
        var key = deadlineKeys[j.met === false ? 1 : 0], colour = key.backgroundColor;
        var dataset = datasets.indexOf(key);
        lastRows[k].forEach(function (row) { ticks.push({ at: j.deadline, row: row, colour: colour, dataset: dataset }); });
        if (filter && filter.size <= 3) lines.push({ at: j.deadline, label: "deadline " + j.id, colour: colour, dash: [2, 3] });
      });
      return { ticks: ticks, lines: lines };
    }
    var nightEnd = { at: d.hours, label: "end of night " + clock.hhmm(d.hours), colour: "#222" };
    var bands = d.windows.map(function (w) {
      return { from: w.from, to: w.to, label: "window " + watts(w.budget) };
    });
    var rules = d.groups.filter(function (g) { return g.first > 0; }).map(function (g) { return g.first; });

    var box = document.getElementById("night-timeline-box");
    box.style.height = Math.max(220, rows.length * 17 + 110) + "px";
    var tip = new Tip(box, "night-tip");
    var first = deadlineMarks(null);
    var timeline = new Chart(document.getElementById("night-timeline"), {
      type: "bar",
      data: { labels: rows, datasets: datasets },
      options: {
        indexAxis: "y",
        maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: true, axis: "xy" },
        scales: {
          x: {
            type: "linear", min: 0, max: d.horizon, position: "top",
            afterBuildTicks: function (scale) { clock.ticks(scale); },
            ticks: { autoSkip: false, maxRotation: 0, callback: function (v, i, t) { return clock.tickLabel(v, i, t); } },
            grid: { color: "rgba(0,0,0,0.08)" }
          },
          y: { type: "category", ticks: { autoSkip: false, font: { size: 10 } }, grid: { display: false },
               afterFit: function (scale) { scale.width = Y_AXIS_WIDTH; } }
        },
        plugins: {
          legend: legend(),
          tooltip: { enabled: false },
          barLabels: {
            text: function (raw) { return raw && !raw.down ? jobs[raw.job].id : ""; },
            colour: function (dataset) { return dataset.kind === "restart" ? "#222" : "#fff"; }
          },
          marks: { bands: bands, rules: rules, lines: [nightEnd].concat(first.lines), ticks: first.ticks },
          zoom: zoomOptions(0, d.horizon, 0.25, null)
        },
        onHover: function (event, active, chart) {
          var el = active[0];
          if (!el) { tip.hide(); if (hot !== null) { hot = null; chart.update("none"); } return; }
          var raw = chart.data.datasets[el.datasetIndex].data[el.index];
          if (raw.down) {
            tip.show(event.x, event.y, rows[raw.row] + " is down", [clock.text(raw.x[0]) + " → " + clock.text(raw.x[1])]);
          } else {
            tip.show(event.x, event.y, jobs[raw.job].id, segmentLines(raw));
          }
          var now = raw.down ? null : raw.job;
          if (now !== hot) { hot = now; chart.update("none"); }
        }
      },
      plugins: [barLabels, marks]
    });

    function segmentLines(raw) {
      var s = segments[raw.seg], j = jobs[raw.job];
      var lines = [
        "priority " + j.priority,
        "devices " + s.devices,
        "this row " + rows[raw.row] + " @ " + watts(raw.cap),
        clock.text(s.from) + " → " + clock.text(s.to) + " (" + duration(s.to - s.from) + ")",
        s.restart ? "restarting from a checkpoint: devices held, no progress" : "speedup " + num(s.speedup, 4)
      ];
      if (j.deadline !== null) {
        lines.push("deadline " + clock.text(j.deadline) + (j.met === false ? " — missed" : j.met ? " — met" : ""));
      }
      if (j.restarts) lines.push(j.restarts + " restart" + (j.restarts > 1 ? "s" : ""));
      if (j.reason) lines.push(j.reason);
      return lines;
    }

    var power = powerChart(d, clock, bands);
    var tools = document.getElementById("night-tools");
    new Filter(tools, "night", jobs, document.getElementById("jobs"), function (shown) {
      visible = shown.size === jobs.length ? null : shown;
      var now = points(visible);
      timeline.data.datasets.forEach(function (ds) { if (now[ds.kind]) ds.data = now[ds.kind]; });
      var m = deadlineMarks(visible);
      timeline.options.plugins.marks.ticks = m.ticks;
      timeline.options.plugins.marks.lines = [nightEnd].concat(m.lines);
      timeline.update("none");
    }).update();
    var sync = zoomTools(tools, "night", [timeline, power]);
    timeline.options.plugins.zoom = zoomOptions(0, d.horizon, 0.25, sync);
    power.options.plugins.zoom = zoomOptions(0, d.horizon, 0.25, sync);
    timeline.update("none");
    power.update("none");
    box.addEventListener("mouseleave", function () { tip.hide(); if (hot !== null) { hot = null; timeline.update("none"); } });
  }

  function powerChart(d, clock, bands) {
    var p = d.power, n = p.t.length;
    function series(values) {
      var out = values.map(function (v, i) { return { x: p.t[i], y: v }; });
      if (n) out.push({ x: d.horizon, y: values[n - 1] });
      return out;
    }
    var palette = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];
    var datasets = [
      { label: "fleet draw", data: series(p.power), borderColor: "#1f77b4", backgroundColor: "rgba(31,119,180,0.12)",
        fill: "origin", stepped: true, borderWidth: 2, pointRadius: 0 },
      { label: "global budget in force", data: series(p.budget), borderColor: "#d62728", borderDash: [6, 4],
        stepped: true, borderWidth: 1.6, pointRadius: 0, spanGaps: false }
    ];
    p.domains.forEach(function (dom, k) {
      var colour = palette[k % palette.length];
      datasets.push({ label: "domain " + dom.id + " draw", data: series(dom.power), borderColor: colour, stepped: true,
                      borderWidth: 1.2, pointRadius: 0, hidden: true });
      datasets.push({ label: "domain " + dom.id + " budget", data: series(dom.budget), borderColor: colour,
                      borderDash: [2, 3], stepped: true, borderWidth: 1.2, pointRadius: 0, hidden: true });
    });
    var box = document.getElementById("night-power-box");
    var tip = new Tip(box, "power-tip");

    function eventAt(hours) {
      var k = -1;
      for (var i = 0; i < n; i++) if (p.t[i] <= hours + 1e-9) k = i;
      return k;
    }
    var chart = new Chart(document.getElementById("night-power"), {
      type: "line",
      data: { datasets: datasets },
      options: {
        maintainAspectRatio: false,
        parsing: false,
        interaction: { mode: "x", intersect: false },
        scales: {
          x: { type: "linear", min: 0, max: d.horizon,
               afterBuildTicks: function (scale) { clock.ticks(scale); },
               ticks: { autoSkip: false, maxRotation: 0, callback: function (v, i, t) { return clock.tickLabel(v, i, t); } } },
          y: { beginAtZero: true, title: { display: true, text: "W" },
               ticks: { callback: function (v) { return Number(v).toLocaleString("en-US"); } },
               afterFit: function (scale) { scale.width = Y_AXIS_WIDTH; } }
        },
        plugins: {
          legend: { position: "bottom", labels: { boxWidth: 14 } },
          tooltip: { enabled: false },
          marks: { bands: bands, lines: [{ at: d.hours, label: "end of night", colour: "#222" }], cursor: null },
          zoom: zoomOptions(0, d.horizon, 0.25, null)
        },
        onHover: function (event, active, c) {
          var hours = c.scales.x.getValueForPixel(event.x), area = c.chartArea;
          var k = eventAt(hours);
          if (k < 0 || event.x < area.left || event.x > area.right || hours > d.horizon) {
            tip.hide(); c.options.plugins.marks.cursor = null; c.draw(); return;
          }
          var until = k + 1 < n ? p.t[k + 1] : d.horizon;
          var lines = ["fleet draw " + watts(p.power[k])];
          if (p.budget[k] !== null) {
            lines.push("global budget in force " + watts(p.budget[k]) + " (" + p.budgetOf[k] + "), " +
                       (100 * p.power[k] / p.budget[k]).toFixed(1) + " % used");
          } else {
            lines.push("no global budget");
          }
          p.domains.forEach(function (dom) {
            lines.push("domain " + dom.id + ": " + watts(dom.power[k]) + (dom.budget[k] !== null ? " of " + watts(dom.budget[k]) : ""));
          });
          tip.show(event.x, event.y, clock.text(p.t[k]) + " → " + clock.text(until), lines);
          c.options.plugins.marks.cursor = hours;
          c.draw();
        }
      },
      plugins: [marks]
    });
    box.addEventListener("mouseleave", function () { tip.hide(); chart.options.plugins.marks.cursor = null; chart.draw(); });
    return chart;
  }

  // -- a plan: placement -----------------------------------------------------------------------------------------

  function planPage(d) {
    showLive("plan-live");
    var jobs = d.jobs, groups = d.groups, hot = null;
    var labels = groups.map(function (g) { return g.id + " · " + g.count + " × " + g.model; });

    function points(filter) {
      var byKind = {};
      PRIORITIES.forEach(function (k) { byKind[k] = []; });
      d.bars.forEach(function (b) {
        var j = jobs[b.job], g = groups[b.group];
        if (filter && !filter.has(b.job)) return;
        byKind[byKind[j.priority] ? j.priority : "low"].push({
          x: [100 * b.first / g.count, 100 * (b.first + b.count) / g.count], y: labels[b.group],
          job: b.job, group: b.group, count: b.count, cap: b.cap
        });
      });
      return byKind;
    }
    var byKind = points(null);
    var datasets = PRIORITIES.map(function (kind) {
      return {
        label: kind, kind: kind, data: byKind[kind], grouped: false, barPercentage: 0.8, categoryPercentage: 1.0,
        legendColour: COLOURS[kind],
        borderColor: "#fff", borderWidth: 1, borderSkipped: false,
        backgroundColor: function (ctx) {
          return hot !== null && ctx.raw && ctx.raw.job !== hot ? fade(COLOURS[kind], 0.4) : COLOURS[kind];
        }
      };
    });
    datasets.push({
      label: "idle", kind: "idle", grouped: false, barPercentage: 0.8, categoryPercentage: 1.0, backgroundColor: IDLE,
      data: groups.filter(function (g) { return g.idle > 0; }).map(function (g) {
        var k = groups.indexOf(g);
        return { x: [100 * g.used / g.count, 100], y: labels[k], idle: true, group: k };
      })
    });
    var box = document.getElementById("plan-placement-box");
    box.style.height = Math.max(200, groups.length * 56 + 110) + "px";
    var tip = new Tip(box, "plan-tip");
    var chart = new Chart(document.getElementById("plan-placement"), {
      type: "bar",
      data: { labels: labels, datasets: datasets },
      options: {
        indexAxis: "y",
        maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: true, axis: "xy" },
        scales: {
          x: { type: "linear", min: 0, max: 100, title: { display: true, text: "share of the group's devices" },
               ticks: { callback: function (v) { return v + " %"; } } },
          y: { type: "category", grid: { display: false } }
        },
        plugins: {
          legend: legend(),
          tooltip: { enabled: false },
          barLabels: {
            text: function (raw) {
              if (!raw || raw.idle) return null;
              var id = jobs[raw.job].id;
              return [id + " × " + raw.count + " @ " + watts(raw.cap), id + " × " + raw.count, id];
            },
            colour: function () { return "#fff"; }
          }
        },
        onHover: function (event, active, c) {
          var el = active[0];
          if (!el) { tip.hide(); if (hot !== null) { hot = null; c.update("none"); } return; }
          var raw = c.data.datasets[el.datasetIndex].data[el.index], g = groups[raw.group];
          if (raw.idle) {
            tip.show(event.x, event.y, g.id + ": idle", [g.idle + " of " + g.count + " devices", "group draws " + watts(g.power)]);
          } else {
            var j = jobs[raw.job];
            var lines = [
              "priority " + j.priority,
              "here " + raw.count + " of " + g.count + " " + g.id + " @ " + watts(raw.cap),
              "devices " + j.devices,
              "speedup " + num(j.speedup, 4) + (j.runtime !== null ? ", runs " + duration(j.runtime) : "")
            ];
            if (j.deadline !== null) {
              lines.push("deadline " + duration(j.deadline) + " after the start" +
                         (j.met === false ? " — missed" : j.met ? " — met" : ""));
            }
            tip.show(event.x, event.y, j.id, lines);
          }
          var now = raw.idle ? null : raw.job;
          if (now !== hot) { hot = now; c.update("none"); }
        }
      },
      plugins: [barLabels]
    });
    box.addEventListener("mouseleave", function () { tip.hide(); if (hot !== null) { hot = null; chart.update("none"); } });
    new Filter(document.getElementById("plan-tools"), "plan", jobs, document.getElementById("jobs"), function (shown) {
      var now = points(shown.size === jobs.length ? null : shown);
      chart.data.datasets.forEach(function (ds) { if (now[ds.kind]) ds.data = now[ds.kind]; });
      chart.update("none");
    }).update();
  }

  // -- a frontier: the curve -------------------------------------------------------------------------------------

  function frontierPage(d) {
    showLive("frontier-live");
    var pts = d.points;
    var statusColour = { optimal: "#1f77b4", time_limit: "#ff9f1c", heuristic: "#ff9f1c" };
    var data = pts.map(function (p, i) { return { x: p.budget / 1000, y: p.speedup, index: i }; });
    var box = document.getElementById("frontier-curve-box");
    var tip = new Tip(box, "frontier-tip");
    var rows = document.querySelectorAll("#points tbody tr[data-index]");
    var lo = Math.min.apply(null, data.map(function (p) { return p.x; }).concat(d.marks.map(function (m) { return m.budget / 1000; })));
    var hi = Math.max.apply(null, data.map(function (p) { return p.x; }).concat(d.marks.map(function (m) { return m.budget / 1000; })));
    var pad = Math.max((hi - lo) * 0.04, 0.05);
    var lines = d.marks.map(function (m) {
      return { at: m.budget / 1000, label: m.label + " " + (m.budget / 1000).toFixed(2) + " kW",
               colour: m.label === "current budget" ? "#d62728" : m.label === "knee" ? "#2ca02c" : "#777" };
    });
    var chart = new Chart(document.getElementById("frontier-curve"), {
      type: "line",
      data: { datasets: [{
        label: "weighted speedup", data: data, borderColor: "#1f77b4", borderWidth: 2, tension: 0,
        pointRadius: 4, pointHoverRadius: 7,
        pointBackgroundColor: function (ctx) { return ctx.raw ? statusColour[pts[ctx.raw.index].status] || "#d62728" : "#1f77b4"; }
      }] },
      options: {
        maintainAspectRatio: false,
        parsing: false,
        interaction: { mode: "nearest", intersect: false, axis: "x" },
        scales: {
          x: { type: "linear", min: lo - pad, max: hi + pad, title: { display: true, text: "global power budget (kW)" } },
          y: { grace: "8%", title: { display: true, text: "weighted speedup" } }
        },
        plugins: {
          legend: { display: false },
          tooltip: { enabled: false },
          marks: { lines: lines },
          zoom: zoomOptions(lo - pad, hi + pad, (hi - lo) / 50 || 0.01, null)
        },
        onHover: function (event, active, c) {
          var el = active[0];
          Array.prototype.forEach.call(rows, function (r) { r.classList.remove("hot"); });
          if (!el) { tip.hide(); return; }
          var p = pts[el.index];
          tip.show(event.x, event.y, "budget " + (p.budget / 1000).toFixed(2) + " kW", [
            "weighted speedup " + num(p.speedup, 6),
            "status " + p.status + (p.gap !== null ? ", gap " + (100 * p.gap).toFixed(2) + " %" : ""),
            "draws " + watts(p.power),
            p.admitted + " jobs admitted, hard deadlines met " + p.met + " / " + p.hard
          ]);
          if (rows[el.index]) rows[el.index].classList.add("hot");
        }
      },
      plugins: [marks]
    });
    box.addEventListener("mouseleave", function () {
      tip.hide();
      Array.prototype.forEach.call(rows, function (r) { r.classList.remove("hot"); });
    });
    var tools = document.getElementById("frontier-tools");
    var reset = make("button", { type: "button", id: "frontier-zoom-reset", text: "whole range" });
    reset.addEventListener("click", function () { chart.resetZoom(); });
    tools.appendChild(reset);
    tools.appendChild(make("span", { className: "note", text: "hover a point for its plan (orange: the solve stopped at its " +
                                                           "time limit) · drag to pan · ctrl + wheel or shift + drag to zoom" }));
  }

  var pages = { night: nightPage, plan: planPage, frontier: frontierPage };
  if (pages[DATA.kind]) pages[DATA.kind](DATA);
})();
