// tsbench's interactive report (report_page.py inlines it after plotly and the data):
// filters over runs, databases, settings and query types, and the tables and charts of the
// chosen cells. Every number is the data model's (report_model.py); this script only
// filters, divides (ratios to the best, geometric means) and draws.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("tsbench-data").textContent);
  const several = D.runs.length > 1;
  const cellByKey = new Map(D.cells.map((c) => [c.key, c]));
  const types = [...new Set(D.correctness.map((v) => v.type).concat(D.latency.map((l) => l.type)))];
  const PLOT = { displaylogo: false, responsive: true };

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[ch]));
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return "";
    return Number(v).toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function sig(v) {          // a number with about three significant digits
    if (v === null || v === undefined) return "";
    const a = Math.abs(v);
    return fmt(v, a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
  }
  function runLabel(i) { return D.runs[i].label; }
  function label(c) {
    return (several ? runLabel(c.run) + " · " : "") + c.target + (c.settings ? " " + c.settings : "");
  }
  function dbKey(run, target) { return (several ? runLabel(run) + " · " : "") + target; }

  // ---- filters ----------------------------------------------------------------------------------
  const choices = {
    run: D.runs.map((r) => r.label),
    database: [...new Set(D.cells.map((c) => c.target))],
    settings: [...new Set(D.cells.map((c) => c.settings || "(none)"))],
    type: types,
  };
  const chosen = {};
  function buildFilters() {
    const box = document.getElementById("filters");
    for (const [name, values] of Object.entries(choices)) {
      chosen[name] = new Set(values);
      if (name === "run" && !several) continue;
      const fs = document.createElement("fieldset");
      fs.dataset.filter = name;
      fs.innerHTML = "<legend>" + esc(name === "type" ? "query types" : name === "database" ? "databases" : name === "run" ? "runs" : "settings")
        + "</legend>" + values.map((v) => "<label><input type='checkbox' checked data-filter='" + esc(name)
        + "' value='" + esc(v) + "'> " + esc(v) + "</label>").join("");
      box.appendChild(fs);
    }
    box.addEventListener("change", (ev) => {
      const t = ev.target;
      if (!t.dataset.filter) return;
      if (t.checked) chosen[t.dataset.filter].add(t.value); else chosen[t.dataset.filter].delete(t.value);
      draw();
    });
  }
  function shownCells() {
    return D.cells.filter((c) => chosen.run.has(runLabel(c.run)) && chosen.database.has(c.target)
      && chosen.settings.has(c.settings || "(none)"));
  }
  function shownTypes() { return types.filter((t) => chosen.type.has(t)); }

  // ---- runs and warnings ------------------------------------------------------------------------
  function drawRuns() {
    document.getElementById("runs").innerHTML = D.runs.map((r) => {
      const h = r.host || {};
      const st = r.status || {};
      return "<p>" + (several ? "<b>" + esc(r.label) + "</b>: " : "") + esc(r.description || "")
        + " " + ["ok", "failed", "interrupted"].map((k) => (st[k] || 0) + " " + k).join(", ") + ". Host: "
        + esc(h.cpu_model || "") + ", " + esc(h.cores) + " cores, " + fmt((h.memory_bytes || 0) / 2 ** 30, 1)
        + " GiB, kernel " + esc(h.kernel || "") + ". tsbench " + esc(r.tsbench || "") + " ("
        + esc((r.git_revision || "no git").slice(0, 12)) + "). Servers: "
        + Object.entries(r.servers).map(([k, v]) => esc(k) + " " + esc(v)).join(", ") + ".</p>";
    }).join("");
  }
  function drawWarnings(cells) {
    const busy = cells.filter((c) => c.busy);
    const noisy = cells.filter((c) => c.noisy);
    const lines = [];
    if (busy.length) lines.push("&#9888; " + busy.length + " cell(s) ran on a busy machine: "
      + busy.map((c) => esc(label(c)) + (c.busy_reason ? " (" + esc(c.busy_reason) + ")" : "")).join("; "));
    if (noisy.length) lines.push("&#9888; " + noisy.length + " cell(s) have noisy figures (95% interval wider "
      + "than &plusmn;10% of the median): " + noisy.map((c) => esc(label(c)) + (c.noisy_reason ? " (" + esc(c.noisy_reason) + ")" : "")).join("; "));
    document.getElementById("warnings").innerHTML = lines.map((l) => "<div class='warn'>" + l + "</div>").join("");
  }

  // ---- the cells table --------------------------------------------------------------------------
  const COLUMNS = [
    ["rows_per_s", "rows/s", (v) => fmt(v, 0)], ["values_per_s", "values/s", (v) => fmt(v, 0)],
    ["disk_bytes", "disk MB", (v) => fmt(v / 1e6, 1)], ["query_p50_ms", "p50 ms", (v) => fmt(v, 2)],
    ["query_p99_ms", "p99 ms", (v) => fmt(v, 2)], ["qps", "queries/s", (v) => fmt(v, 1)],
    ["values_per_cpu_s", "values per CPU s", (v) => fmt(v, 0)], ["bytes_per_value", "bytes per value", (v) => fmt(v, 3)],
    ["disk_to_raw", "disk / raw", (v) => fmt(v, 3)],
  ];
  function ciText(c, col, f) {
    const ci = c[col + "_ci"];
    if (!ci || ci[0] === null || ci[1] === null) return "";
    return "<span class='ci'>CI " + f(ci[0]) + " &ndash; " + f(ci[1]) + "</span>";
  }
  function machine(c) {      // the machine-noise columns of a cell, where the run has them
    const kv = Object.entries(c.machine || {}).filter(([, v]) => v !== null);
    return kv.length ? "<span class='ci machine'>" + kv.map(([k, v]) => esc(k) + " " + (typeof v === "number" ? sig(v) : esc(v))).join(", ") + "</span>" : "";
  }
  function drawCells(cells) {
    const head = (several ? ["run"] : []).concat(["cell", "database", "settings", "status"], COLUMNS.map((x) => x[1]), ["warnings, machine"]);
    const rows = cells.map((c) => {
      const warn = [c.busy ? "busy machine" + (c.busy_reason ? ": " + c.busy_reason : "") : "",
        c.noisy ? "noisy" + (c.noisy_reason ? ": " + c.noisy_reason : "") : ""].filter(Boolean);
      const tds = (several ? ["<td>" + esc(runLabel(c.run)) + "</td>"] : []).concat([
        "<td class='n'>" + c.cell + "</td>", "<td>" + esc(c.target) + "</td>", "<td>" + esc(c.settings) + "</td>",
        "<td title='" + esc(c.reason) + "'>" + esc(c.status) + "</td>"],
      COLUMNS.map(([col, , f]) => {
        const v = c[col];
        const mark = col === "values_per_cpu_s" && v !== null && c.cpu_role === "client" ? " c" : "";
        return "<td class='n' data-col='" + col + "'" + (v === null ? "" : " data-v='" + v + "'") + ">"
          + f(v) + mark + ciText(c, col, f) + "</td>";
      }), ["<td>" + (warn.length ? "<span class='badge'>&#9888; " + esc(warn.join("; ")) + "</span>" : "") + machine(c) + "</td>"]);
      return "<tr data-key='" + esc(c.key) + "'" + (warn.length ? " class='warned'" : "") + ">" + tds.join("") + "</tr>";
    });
    document.getElementById("cells").innerHTML = "<table id='cells-table'><thead><tr>"
      + head.map((h) => "<th>" + esc(h) + "</th>").join("") + "</tr></thead><tbody>" + rows.join("") + "</tbody></table>";
  }

  // ---- charts -----------------------------------------------------------------------------------
  function plot(id, traces, layout) {
    const el = document.getElementById(id);
    const base = { margin: { t: 40, r: 20, b: 60, l: 70 }, legend: { font: { size: 10 } }, height: 380 };
    if (!traces.length) {
      Plotly.purge(el);
      el.innerHTML = "<p class='caption'>Nothing to show for this choice (the run has no such data).</p>";
      el.dataset.empty = "1";
      return;
    }
    if (el.dataset.empty) { el.innerHTML = ""; delete el.dataset.empty; }
    const all = Object.assign(base, layout);
    all.xaxis = Object.assign({ automargin: true }, layout.xaxis || {});       // long labels are not cut
    Plotly.react(el, traces, all, PLOT);
  }
  function drawFigure(cells) {
    const col = document.getElementById("figure-choice").value;
    const have = cells.filter((c) => c[col] !== null && c[col] !== undefined);
    const withCi = have.some((c) => c[col + "_ci"]);
    const byTarget = new Map();
    for (const c of have) (byTarget.get(c.target) || byTarget.set(c.target, []).get(c.target)).push(c);
    const traces = [...byTarget.entries()].map(([t, cs]) => ({
      type: "bar", name: t, x: cs.map(label), y: cs.map((c) => c[col]),
      error_y: withCi ? { type: "data", symmetric: false,
        array: cs.map((c) => (c[col + "_ci"] ? c[col + "_ci"][1] - c[col] : 0)),
        arrayminus: cs.map((c) => (c[col + "_ci"] ? c[col] - c[col + "_ci"][0] : 0)) } : undefined,
    }));
    plot("figure-chart", traces, { title: { text: col + " (" + (D.figures[col] || "") + ")" }, barmode: "group" });
  }
  function latencyOf(cells, stat) {          // {cell key: {type: value}} of the shown types
    const keys = new Set(cells.map((c) => c.key));
    const t = new Set(shownTypes());
    const out = new Map();
    for (const l of D.latency) {
      if (!keys.has(l.key) || !t.has(l.type)) continue;
      (out.get(l.key) || out.set(l.key, {}).get(l.key))[l.type] = l[stat];
    }
    return out;
  }
  function drawRelative(cells) {
    const stat = document.getElementById("stat-choice").value;
    const lat = latencyOf(cells, stat);
    const ran = cells.filter((c) => lat.has(c.key));
    const ts = shownTypes().filter((t) => ran.some((c) => lat.get(c.key)[t] !== undefined));
    const best = {};
    for (const t of ts) best[t] = Math.min(...ran.map((c) => lat.get(c.key)[t]).filter((v) => v !== undefined));
    const common = ts.filter((t) => ran.every((c) => lat.get(c.key)[t] !== undefined));
    const geo = (c) => (common.length ? Math.exp(common.reduce((s, t) => s + Math.log(lat.get(c.key)[t] / best[t]), 0) / common.length) : null);
    const traces = ran.map((c) => ({
      type: "bar", name: label(c), x: ts.concat(["geometric mean"]),
      y: ts.map((t) => (lat.get(c.key)[t] === undefined ? null : lat.get(c.key)[t] / best[t])).concat([geo(c)]),
      hovertemplate: "%{x}: %{y:.2f}x the best<extra>" + esc(label(c)) + "</extra>",
    }));
    plot("relative-chart", traces, { barmode: "group", yaxis: { title: { text: stat + " / best (1 = fastest)" }, type: "log" },
      xaxis: { tickangle: -40 } });
    const head = "<tr><th>query type</th>" + ran.map((c) => "<th>" + esc(label(c)) + "<br>" + stat + " ms (x best)</th>").join("") + "</tr>";
    const body = ts.map((t) => "<tr data-type='" + esc(t) + "'><td>" + esc(t) + "</td>" + ran.map((c) => {
      const v = lat.get(c.key)[t];
      return v === undefined ? "<td></td>" : "<td class='n' data-key='" + esc(c.key) + "' data-v='" + v + "'>" + sig(v)
        + " (" + fmt(v / best[t], 2) + ")</td>";
    }).join("") + "</tr>").join("");
    const foot = "<tr><td>geometric mean of the ratios (" + common.length + " types)</td>"
      + ran.map((c) => "<td class='n'>" + fmt(geo(c), 2) + "</td>").join("") + "</tr>";
    document.getElementById("relative-table").innerHTML = ran.length
      ? "<table id='latency-table'>" + head + body + foot + "</table>" : "";
  }
  function drawCdf(cells) {
    const sel = document.getElementById("cdf-choice");
    const keys = new Set(cells.map((c) => c.key));
    const ts = shownTypes().filter((t) => D.latency.some((l) => l.type === t && keys.has(l.key)));
    const keep = ts.includes(sel.value) ? sel.value : ts[0];
    sel.innerHTML = ts.map((t) => "<option" + (t === keep ? " selected" : "") + ">" + esc(t) + "</option>").join("");
    const traces = D.latency.filter((l) => l.type === keep && keys.has(l.key)).map((l) => ({
      type: "scatter", mode: "lines+markers", line: { shape: "hv" }, marker: { size: 3 }, name: label(cellByKey.get(l.key)),
      x: l.cdf.map((p) => p[0]), y: l.cdf.map((p) => p[1]),
    }));
    plot("cdf-chart", traces, { title: { text: keep || "" }, xaxis: { title: { text: "latency ms" }, type: "log" },
      yaxis: { title: { text: "fraction of executions at or below" }, range: [0, 1.02] } });
  }
  function drawSeries(cells, kind, id, ytitle) {
    const keys = new Set(cells.map((c) => c.key));
    const traces = D.series.filter((s) => s.kind === kind && keys.has(s.key)).map((s) => ({
      type: "scatter", mode: "lines", x: s.x, y: s.y,
      name: label(cellByKey.get(s.key)) + (s.trial !== null ? " trial " + s.trial : "") + (s.role === "client" ? " (client)" : ""),
    }));
    const xtitle = kind === "stream" ? "second of the stream" : kind === "load" ? "seconds since load start" : "seconds since cell start";
    plot(id, traces, { yaxis: { title: { text: ytitle } }, xaxis: { title: { text: xtitle }, rangeslider: { visible: true } } });
  }

  function drawAgainst(cells, id, xOf, yOf, xtitle, ytitle, logx) {
    const byTarget = new Map();
    for (const c of cells.filter((c) => c.status === "ok" && xOf(c) !== null && yOf(c) !== null)) {
      const name = (several ? runLabel(c.run) + " · " : "") + c.target;
      (byTarget.get(name) || byTarget.set(name, []).get(name)).push(c);
    }
    const traces = [...byTarget.entries()].map(([name, cs]) => {
      cs.sort((a, b) => xOf(a) - xOf(b));
      return { type: "scatter", mode: "markers", marker: { size: 8 }, name: name, x: cs.map(xOf), y: cs.map(yOf), text: cs.map(label) };
    });
    plot(id, traces, { xaxis: { title: { text: xtitle }, type: logx ? "log" : "linear" }, yaxis: { title: { text: ytitle } } });
  }
  function drawStreams(cells) {
    const streams = cells.filter((c) => c.series !== null && c.series !== undefined);
    const several_series = new Set(streams.map((c) => c.series)).size > 1;
    const pss = (c) => { const v = c.server_pss_peak_bytes !== null ? c.server_pss_peak_bytes : c.client_pss_peak_bytes; return v === null ? null : v / 2 ** 20; };
    drawAgainst(several_series ? streams : [], "series-chart", (c) => c.series, pss, "series", "peak PSS MiB", true);
    drawAgainst(cells, "rate-chart", (c) => c.rows_per_s, (c) => (c.stream_query_p99_ms === undefined ? null : c.stream_query_p99_ms),
      "write rate reached, rows/s", "query p99 ms while writing");
  }

  // ---- correctness ------------------------------------------------------------------------------
  function drawCorrectness(cells) {
    const dbs = [...new Map(cells.map((c) => [dbKey(c.run, c.target), [c.run, c.target]])).entries()];
    const ts = shownTypes();
    const verdict = new Map(D.correctness.map((v) => [v.run + "\u0000" + v.target + "\u0000" + v.type, v]));
    const head = "<tr><th>database</th>" + ts.map((t) => "<th>" + esc(t) + "</th>").join("") + "</tr>";
    const body = dbs.map(([name, [run, target]]) => "<tr><td>" + esc(name) + "</td>" + ts.map((t) => {
      const v = verdict.get(run + "\u0000" + target + "\u0000" + t) || { state: "not run", detail: "no execution recorded" };
      const text = v.state === "equal" ? "equal " + v.n : v.state === "differing" ? "differing " + v.bad + "/" + v.n : v.state;
      return "<td class='cm " + v.state.replace(" ", "-") + "' data-db='" + esc(name) + "' data-type='" + esc(t)
        + "' data-state='" + esc(v.state) + "' title='" + esc(v.detail) + "'>" + esc(text) + "</td>";
    }).join("") + "</tr>").join("");
    document.getElementById("correctness").innerHTML = "<table id='correctness-table'>" + head + body + "</table>";
  }

  function draw() {
    const cells = shownCells();
    drawWarnings(cells);
    drawCells(cells);
    drawFigure(cells);
    drawRelative(cells);
    drawCdf(cells);
    drawSeries(cells, "load", "load-chart", "rows/s (load)");
    drawSeries(cells, "stream", "stream-chart", "rows/s (stream)");
    drawStreams(cells);
    drawSeries(cells, "cpu", "cpu-chart", "CPU % (100 = one core)");
    drawSeries(cells, "memory", "memory-chart", "PSS MiB");
    drawCorrectness(cells);
  }

  function init() {
    drawRuns();
    buildFilters();
    const figs = Object.keys(D.figures).filter((f) => D.cells.some((c) => c[f] !== null && c[f] !== undefined));
    const fsel = document.getElementById("figure-choice");
    fsel.innerHTML = figs.map((f) => "<option>" + esc(f) + "</option>").join("");
    for (const id of ["figure-choice", "stat-choice", "cdf-choice"]) document.getElementById(id).addEventListener("change", draw);
    draw();
    document.body.dataset.ready = "1";
  }
  init();
})();
