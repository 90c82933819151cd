"""The report's HTML page, rendered with Jinja2 (autoescape on: every label, reply and cell is
text, never markup). The page is self-contained — styles and script inline, figures as data URLs,
no network — apart from the item browser's sidecar files under ``browser/``, which it loads only
when the user opens a page of items.
"""

from __future__ import annotations

from typing import Any

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Bio-VQA report</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;line-height:1.4}
main{margin:0 auto;padding:1rem 1.5rem 4rem}
main>p,main>nav,section>p,section>h2,section>h3,section>details,section>dl{max-width:1100px}
h1{font-size:1.6rem;margin:.6rem 0} h2{margin-top:2.4rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
h3{font-size:1.02rem;margin:1.6rem 0 .4rem}
nav.toc{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.6rem 1rem;margin:1rem 0;font-size:.9rem}
nav.toc ol{margin:.2rem 0;padding-left:1.3rem} nav.toc li{margin:.1rem 0}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.5rem 0 1.2rem;font-size:.82rem}
th,td{border:1px solid #d0d7de;padding:.25rem .45rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}
thead th{background:#f6f8fa} th[colspan]{text-align:center}
tbody tr:nth-child(even){background:#fbfcfd}
tr.kind-specialist td{color:#57606a;font-style:italic} tr.kind-mean td{font-weight:600;border-top:2px solid #8c959f}
tr.kind-floor td,tr.kind-control td{color:#57606a;background:#f3f4f6}
tr.kind-published td{color:#5c4a00;background:#fff8e1}
.badge{display:inline-block;margin-left:.4rem;padding:0 .3rem;border-radius:4px;background:#f5d76e;color:#3d3000;font-size:.68rem;font-style:normal}
#table3 .model{position:sticky;left:0;z-index:2;background:#fff;text-align:left;box-shadow:1px 0 0 #d0d7de}
#table3 tr.kind-floor .model,#table3 tr.kind-control .model{background:#f3f4f6} #table3 tr.kind-published .model{background:#fff8e1}
#table3 thead th.model{background:#f6f8fa;z-index:3}
.groups{margin:.4rem 0;font-size:.85rem} .groups button{margin-right:.3rem;border:1px solid #d0d7de;background:#f6f8fa;border-radius:4px;padding:.1rem .5rem;cursor:pointer}
.groups button.on{background:#0969da;color:#fff;border-color:#0969da}
table.glossary td{text-align:left;white-space:normal;vertical-align:top;max-width:28rem} table.glossary td:first-child{white-space:nowrap;font-weight:600}
td.best{font-weight:700;background:#dafbe1} td.second{text-decoration:underline}
td.worst{color:#a40e26} td.tie::after{content:" ≈";color:#0969da}
.ci{color:#57606a;font-size:.7rem}
.meta,.note{color:#57606a;font-size:.85rem}
img.figure{max-width:100%;border:1px solid #d0d7de;margin:.5rem 0}
#browser .filters{display:flex;flex-wrap:wrap;gap:.6rem;align-items:end;margin:.5rem 0}
#browser label{font-size:.8rem;display:flex;flex-direction:column}
#browser .item{border:1px solid #d0d7de;border-radius:6px;padding:.6rem;margin:.6rem 0;display:grid;grid-template-columns:210px 1fr;gap:.8rem}
#browser .item img{max-width:200px;max-height:200px;border:1px solid #d0d7de}
#browser .q{font-weight:600;white-space:pre-wrap} #browser .opts{margin:.2rem 0;padding-left:1.2rem}
#browser table.replies td{white-space:pre-wrap;text-align:left;max-width:360px;vertical-align:top}
#browser .tag{display:inline-block;background:#eef1f4;border-radius:4px;padding:0 .35rem;margin-right:.3rem;font-size:.75rem}
#browser .gold{color:#1a7f37;font-weight:600}
#browser .item img{cursor:zoom-in} #browser label.check{flex-direction:row;gap:.3rem;align-items:center}
#browser input[type=number]{width:4.5rem} #browser td.why{font-size:.72rem;color:#57606a;max-width:260px}
#overlay{position:fixed;inset:0;background:rgba(0,0,0,.82);display:flex;flex-direction:column;align-items:center;justify-content:center;z-index:10;cursor:zoom-out}
#overlay[hidden]{display:none} #overlay img{max-width:95vw;max-height:88vh;background:#fff} #overlay p{color:#fff;font-size:.85rem}
body.browser-only main>section:not(#browser),body.browser-only nav.toc{display:none}
#full{display:none} body.browser-only #full{display:inline}
</style></head>
<body><main>
<h1>Bio-VQA report</h1>
<p class="meta">biovqa {{ version }} · {{ runs|length }} score folder(s) · components: {{ components|join(", ") }}</p>
<nav class="toc" id="toc"><strong>Contents</strong><ol>
{% for s in toc %}<li><a href="#{{ s.id }}">{{ s.title }}</a></li>{% endfor %}
</ol></nav>

<section id="leaderboard"><h2>Leaderboard (Table 3)</h2>
<p class="note">Each cell: value [{{ ci_label }} lower, upper], in the report's one unit convention
(<a href="#units">units</a>); higher is better. Per column over the generalist models:
<b>bold green</b> best, <u>underlined</u> second, red worst, ≈ a statistical tie with the best
(overlapping intervals). Specialists (italic) are shown for reference and are not ranked;
the Mean row averages the generalists; the Floor row is the image-blind baseline run.
Column names are spelled out in the <a href="#glossary">glossary</a>.</p>
{% if published %}<p class="note">Rows marked <span class="badge">published, not re-run</span> are the figures of
{{ published }}, transcribed as printed (no intervals: the paper prints none there); they are shown for
comparison and never ranked, marked or averaged with the models of this report.</p>{% endif %}
{% if board %}<div class="groups" id="t3-groups">Show:
<button type="button" data-comp="" class="on">all components</button>{% for comp, cols in board.groups %}<button type="button" data-comp="{{ comp }}">{{ comp }}</button>{% endfor %}</div>
<div class="scroll"><table id="table3"><thead>
<tr><th rowspan="2" class="model">model</th>{% for comp, cols in board.groups %}<th colspan="{{ cols|length }}" class="comp comp-{{ comp }}">{{ comp }}</th>{% endfor %}</tr>
<tr>{% for comp, cols in board.groups %}{% for c in cols %}<th title="{{ c.long }}" class="comp comp-{{ comp }}">{{ c.name }}</th>{% endfor %}{% endfor %}</tr>
</thead><tbody>
{% for row in board.rows %}<tr class="kind-{{ row.kind }}"><td class="model">{{ row.name }}{% if row.kind == "published" %}<br><span class="badge">published, not re-run</span>{% endif %}</td>
{% for cell in row.cells %}<td class="{{ cell.mark }} comp comp-{{ cell.component }}"{% if cell.note %} title="{{ cell.note }}"{% endif %}>{{ cell.value }}{% if cell.note %}<sup class="subset">{{ board.mark }}</sup>{% endif %}{% if cell.ci %}<br><span class="ci">{{ cell.ci }}</span>{% endif %}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>
{% if board.footnotes %}<p class="note" id="t3-subsets">{{ board.mark }} Scored on a subset of the benchmark, not comparable
cell for cell with a run scored on every item: {% for f in board.footnotes %}{{ f }}{% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{% if summary is not none %}<h3>Per model, per component</h3>
<p class="note">Where each model leads: per component, the Table 3 columns in which it is best or tied with the best
(overlapping intervals) and the span of its 95% rank intervals. The paper defines no overall score across
components, so none is computed here.</p><div class="scroll">{{ summary }}</div>{% endif %}
{% else %}<p>No component declares Table 3 columns.</p>{% endif %}
{% if ranks is not none %}<h3>Rank 95% intervals</h3>
<p class="note">Each model's rank (1 = best) across bootstrap replicates in which all models are
resampled with the same draws on the items they share; a column without per-item scores for every
model falls back to the ranks its 95% intervals allow. The method of each column is listed below.</p>
<div class="scroll">{{ ranks }}</div>
<details><summary>Method per column and P(best)</summary><div class="scroll">{{ rank_methods }}</div>
<div class="scroll">{{ p_best }}</div></details>{% endif %}
{% if paired is not none %}<h3>Is the lead real? Adjacent models on shared items</h3>
<p class="note">Mean per-item headline score of model a minus model b over the items both answered, with a
95% paired bootstrap interval; “tie” when the interval covers 0.</p><div class="scroll">{{ paired }}</div>{% endif %}
</section>

{% if lite is not none %}<section id="lite"><h2>Full vs Lite</h2>
<p class="note">Does Bio-VQA-Lite (the stratified subset, <code>biovqa lite</code>) rank the models as the
full benchmark does? Spearman ρ between the models' full and Lite scores per Table 3 column, over the
generalist models scored on both, and for each model's mean over the columns both runs hold.</p>
<div class="scroll">{{ lite }}</div></section>{% endif %}

{% if analysis %}<section id="analysis"><h2>Cross-component analysis</h2>
<p class="note">Supplement J: Spearman ρ between tasks over the generalist models, within- vs
across-component agreement with a label-permutation test, standardized α, component
correlations (Holm-corrected; † = not significant) and PCA.</p>
{% for f in analysis_figures %}<img class="figure" alt="{{ f.alt }}" src="data:image/png;base64,{{ f.data }}">{% endfor %}
{% for t in analysis %}<h3>{{ t.title }}</h3><div class="scroll">{{ t.html }}</div>{% endfor %}
</section>{% endif %}

<section id="glossary"><h2>Glossary</h2>
<p class="note">Metrics, sections (§ = main text, A–J = supplement) and equations are those of
<cite>{{ paper }}</cite> ({{ arxiv }}), unless an entry names another paper.</p>
<p class="note" id="units"><b>Units.</b> Every score, rate, accuracy and share in [0, 1] is a fraction printed
with 3 decimals (the paper prints Tables 31, 34, 51 and 88 in percent; here they are fractions like the rest).
Counts and ranks print as integers. Quantities outside [0, 1] say their unit below: cags is ≤ 1 and negative
when a reply is worse than guessing, severity counts taxonomic ranks, d′ and c are in standard-deviation units,
angles in degrees, correlations ρ and r in [−1, 1], differences of fractions in [−1, 1].</p>
<h3>Table 3 columns</h3>
<div class="scroll"><table class="glossary" id="glossary-columns"><thead><tr><th>column</th><th>task</th><th>metric</th><th>unit</th></tr></thead><tbody>
{% for name, task, term in columns %}<tr><td>{{ name }}</td><td>{{ task }}</td><td>{{ term.name }} ({{ term.spelled }})</td><td>{{ term.unit }}</td></tr>{% endfor %}
</tbody></table></div>
<h3>Metrics and table columns</h3>
<div class="scroll"><table class="glossary" id="glossary-terms"><thead><tr><th>term</th><th>spelled out</th><th>in plain words</th><th>formula</th><th>unit</th><th>defined in</th></tr></thead><tbody>
{% for t in terms %}<tr><td><dfn>{{ t.name }}</dfn></td><td>{{ t.spelled }}</td><td>{{ t.plain }}</td><td>{{ t.formula }}</td><td>{{ t.unit }}</td><td>{{ t.section }}</td></tr>{% endfor %}
</tbody></table></div>
</section>

{% for s in sections %}<section id="{{ s.id }}"><h2>{{ s.title }}</h2>
{% for f in s.figures %}<img class="figure" alt="{{ f.alt }}" src="data:image/png;base64,{{ f.data }}">{% endfor %}
{% for t in s.tables %}<h3><a id="{{ t.id }}"></a>{{ t.title }}</h3><div class="scroll">{{ t.html }}</div>{% endfor %}
</section>{% endfor %}

<section id="browser"><h2>Item browser</h2>
<p class="note">Every item with every model's reply side by side, and why each reply got its score.
Items load from <code>browser/</code> beside this file (keep the folder with the report), page by page
until a search, a model's answers, a score range, "models disagree" or a sort asks for all items of the
chosen cells. "Correct" is a score of 1; the score range and correctness read the chosen model's
score, or any model's when none is chosen. Click an image to see it large. The address bar keeps the
view (<code>#browser?component=…&amp;q=…&amp;page=…</code>, or <code>#browser?item=ID</code> for one
item), so it can be shared. <a href="#toc" id="full">Show the full report.</a></p>
<div class="filters">
<label>component<select id="f-component"><option value="">all</option></select></label>
<label>task<select id="f-task"><option value="">all</option></select></label>
<label>group / family / dataset<select id="f-group"><option value="">all</option></select></label>
<label>tier<select id="f-tier"><option value="">all</option></select></label>
<label>search question, gold, replies<input id="f-q" type="search" placeholder="text or item id"></label>
<label>model<select id="f-model"><option value="">any</option></select></label>
<label>answer<select id="f-answer"><option value="">any</option><option value="correct">correct</option><option value="incorrect">incorrect</option></select></label>
<label>score from<input id="f-min" type="number" min="0" max="1" step="0.05" placeholder="0"></label>
<label>to<input id="f-max" type="number" min="0" max="1" step="0.05" placeholder="1"></label>
<label class="check"><span>models disagree</span><input id="f-disagree" type="checkbox"></label>
<label>sort<select id="f-sort"><option value="">benchmark order</option><option value="asc">score, lowest first</option><option value="desc">score, highest first</option></select></label>
<button id="prev" type="button">◀ previous</button><span id="pageinfo"></span><button id="next" type="button">next ▶</button>
</div>
<div id="items"><p class="note">Loading…</p></div>
<div id="overlay" hidden><img id="overlay-img" alt=""><p id="overlay-cap"></p></div>
</section>
</main>
<script>
(function () {
  "use strict";
  // Table 3: show every component, or one at a time (a style rule hides the other groups' cells)
  var bar = document.getElementById("t3-groups"); if (!bar) return;
  var rule = document.createElement("style"); document.head.appendChild(rule);
  Array.prototype.forEach.call(bar.querySelectorAll("button"), function (b) {
    b.addEventListener("click", function () {
      var c = b.getAttribute("data-comp");
      rule.textContent = c ? "#table3 .comp:not(.comp-" + c + "){display:none}" : "";
      Array.prototype.forEach.call(bar.querySelectorAll("button"), function (o) { o.className = o === b ? "on" : ""; });
    });
  });
})();
</script>
<script src="browser/index.js"></script>
<script>
(function () {
  "use strict";
  // index.js holds the facet values with their item counts and one row per cell (component, task,
  // group, tier as indices into the facets; first page file, files, items); page files load when
  // needed. Pages on screen hold M.page_size items of the filtered list, whatever cells they span.
  var M = window.BIOVQA_BROWSER, box = document.getElementById("items");
  if (!M) { box.textContent = "The browser/ folder was not found beside this report."; return; }
  var K = ["component", "task", "group", "tier"], F = {component: "", task: "", group: "", tier: ""};
  var X = {q: "", model: "", answer: "", min: "", max: "", disagree: "", sort: "", item: ""};
  var SIZE = M.page_size, pos = 0, loaded = {}, waiting = {}, started = false, ticket = 0;
  function el(tag, text, cls) { var e = document.createElement(tag); if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; }
  function byId(id) { return document.getElementById(id); }
  function sel(k) { return byId("f-" + k); }
  function val(c, j) { return M.facets[K[j]][c[j]][0]; }
  // an empty value (an item without a group or tier) is listed, filtered and linked as "(none)"
  function enc(v) { return v === "" ? "(none)" : v; }
  function match(c, skip) { for (var j = 0; j < 4; j++) { if (K[j] !== skip && F[K[j]] && enc(val(c, j)) !== F[K[j]]) return false; } return true; }
  function cells() { return M.cells.filter(function (c) { return match(c); }); }
  function fill(k) { var s = sel(k); M.facets[k].forEach(function (f) { var o = el("option"); o.value = enc(f[0]); s.appendChild(o); });
    s.addEventListener("change", function () { F[k] = s.value; pos = 0; counts(k); models(); show(); }); }
  // each list shows the items left under the other filters, values with none hidden; when a change
  // leaves no item, the other filters go back to "all" one by one until some match
  function tally(k, j) { var n = {}; M.cells.forEach(function (c) { if (match(c, k)) n[c[j]] = (n[c[j]] || 0) + c[6]; }); return n; }
  function counts(changed) {
    if (changed) K.forEach(function (k) { if (k !== changed && F[k] && !cells().length) { F[k] = ""; sel(k).value = ""; } });
    K.forEach(function (k, j) { var n = tally(k, j);
      Array.prototype.forEach.call(sel(k).options, function (o, i) { if (!i) return; var m = n[i - 1] || 0;
        o.textContent = o.value + " (" + m.toLocaleString("en") + ")"; o.hidden = !m && o.value !== F[k]; }); }); }
  // the models of the chosen component (or of all), each listed once
  function models() { var s = sel("model"), seen = {}, keep = X.model; while (s.options.length > 1) s.remove(1);
    Object.keys(M.models).forEach(function (c) { if (F.component && enc(c) !== F.component) return;
      M.models[c].forEach(function (m) { if (seen[m]) return; seen[m] = 1; var o = el("option", m); o.value = m; s.appendChild(o); }); });
    s.value = seen[keep] ? keep : ""; X.model = s.value; }
  K.forEach(fill);
  var h = location.hash.split("?")[1];
  if (h) { h.split("&").forEach(function (kv) { var p = kv.split("="), k = decodeURIComponent(p[0]), v = decodeURIComponent(p[1] || "");
    if (k === "page") { pos = Math.max(0, (parseInt(v, 10) || 1) - 1); }
    else if (F.hasOwnProperty(k)) { F[k] = v; sel(k).value = v; }
    else if (X.hasOwnProperty(k)) { X[k] = v; } }); }
  counts(""); models();
  ["q", "answer", "min", "max", "sort"].forEach(function (k) { var e = sel(k); e.value = X[k];
    e.addEventListener(k === "q" || k === "min" || k === "max" ? "input" : "change", function () { X[k] = e.value; X.item = ""; pos = 0; show(); }); });
  sel("model").addEventListener("change", function () { X.model = sel("model").value; pos = 0; show(); });
  sel("disagree").checked = X.disagree === "1";
  sel("disagree").addEventListener("change", function () { X.disagree = sel("disagree").checked ? "1" : ""; pos = 0; show(); });
  function link() { var q = []; K.forEach(function (k) { if (F[k]) q.push(k + "=" + encodeURIComponent(F[k])); });
    Object.keys(X).forEach(function (k) { if (X[k]) q.push(k + "=" + encodeURIComponent(X[k])); });
    if (pos) q.push("page=" + (pos + 1)); if (history.replaceState) history.replaceState(null, "", "#browser" + (q.length ? "?" + q.join("&") : "")); }
  function file(no) { var s = String(no); while (s.length < 5) s = "0" + s; return "browser/page-" + s + ".js"; }
  window.biovqaPage = function (no, rows) { loaded[no] = rows; (waiting[no] || []).forEach(function (f) { f(); }); delete waiting[no]; };
  function load(no, done) { if (loaded[no]) { done(); return; } (waiting[no] = waiting[no] || []).push(done);
    if (waiting[no].length > 1) return; var s = document.createElement("script"); s.src = file(no); document.body.appendChild(s); }
  function loadAll(nos, done) { var left = nos.length; if (!left) { done(); return; } nos.forEach(function (no) { load(no, function () { left -= 1; if (!left) done(); }); }); }
  // the rows of a file with their component attached
  function rowsOf(c, no) { var comp = val(c, 0); return loaded[no].map(function (r) { r.component = comp; return r; }); }
  function files(c) { var out = []; for (var i = 0; i < c[5]; i++) out.push(c[4] + i); return out; }
  // the score of an item that the range, correctness and sort read: the chosen model's, else one per model
  function scores(r) { var names = M.models[r.component] || [], out = [];
    r.replies.forEach(function (rep, i) { if (rep && rep[3] !== null && (!X.model || names[i] === X.model)) out.push(rep[3]); }); return out; }
  function keep(r) {
    if (X.item) return r.id === X.item;
    if (X.q) { var q = X.q.toLowerCase(), hay = [r.id, r.question, r.gold].concat(r.options);
      r.replies.forEach(function (rep) { if (rep) hay.push(rep[1] || "", rep[2] || ""); });
      if (!hay.some(function (t) { return String(t).toLowerCase().indexOf(q) >= 0; })) return false; }
    var s = scores(r), lo = X.min === "" ? -Infinity : parseFloat(X.min), hi = X.max === "" ? Infinity : parseFloat(X.max);
    if (X.model && !s.length) return false;
    if (X.answer === "correct" && !s.some(function (v) { return v >= 0.9995; })) return false;
    if (X.answer === "incorrect" && !s.some(function (v) { return v < 0.9995; })) return false;
    if ((X.min !== "" || X.max !== "") && !s.some(function (v) { return v >= lo && v <= hi; })) return false;
    if (X.disagree) { var all = r.replies.filter(function (rep) { return rep && rep[3] !== null; }).map(function (rep) { return rep[3]; });
      if (!all.length || Math.max.apply(null, all) === Math.min.apply(null, all)) return false; }
    return true; }
  function mean(r) { var s = scores(r); return s.length ? s.reduce(function (a, b) { return a + b; }, 0) / s.length : null; }
  function full() { return X.q || X.model || X.answer || X.min !== "" || X.max !== "" || X.disagree || X.sort || X.item; }
  function pageLine(n, extra) { byId("pageinfo").textContent = n ? " page " + (pos + 1) + " of " + Math.ceil(n / SIZE) + " (" + n.toLocaleString("en") + " items" + (extra || "") + ") " : " no page matches "; }
  function show() { var my = ++ticket, cs = cells(); if (started) link();
    if (!full()) { var n = 0; cs.forEach(function (c) { n += c[6]; }); if (pos * SIZE >= n) pos = Math.max(0, Math.ceil(n / SIZE) - 1);
      pageLine(n); if (!n) { empty(); return; }
      // the files holding items [pos·SIZE, (pos+1)·SIZE) of the concatenated cells
      var start = pos * SIZE, end = start + SIZE, offset = 0, want = [];
      cs.forEach(function (c) { var a = Math.max(start, offset), b = Math.min(end, offset + c[6]);
        if (a < b) want.push({cell: c, from: a - offset, take: b - a}); offset += c[6]; });
      var nos = []; want.forEach(function (w) { for (var i = Math.floor(w.from / SIZE); i <= Math.floor((w.from + w.take - 1) / SIZE); i++) nos.push(w.cell[4] + i); });
      loadAll(nos, function () { if (my !== ticket) return; var rows = [];
        want.forEach(function (w) { var first = Math.floor(w.from / SIZE), last = Math.floor((w.from + w.take - 1) / SIZE), all = [];
          for (var i = first; i <= last; i++) all = all.concat(rowsOf(w.cell, w.cell[4] + i));
          rows = rows.concat(all.slice(w.from - first * SIZE, w.from - first * SIZE + w.take)); });
        render(rows); });
      return; }
    var nos = []; cs.forEach(function (c) { nos = nos.concat(files(c)); });
    byId("pageinfo").textContent = " reading " + nos.length + " page file(s)… ";
    loadAll(nos, function () { if (my !== ticket) return; var rows = [];
      cs.forEach(function (c) { files(c).forEach(function (no) { rows = rows.concat(rowsOf(c, no)); }); });
      rows = rows.filter(keep);
      if (X.sort) { var sign = X.sort === "asc" ? 1 : -1; rows = rows.map(function (r, i) { return [r, mean(r), i]; })
        .sort(function (a, b) { if (a[1] === null || b[1] === null) return (a[1] === null) - (b[1] === null) || a[2] - b[2];
          return sign * (a[1] - b[1]) || a[2] - b[2]; }).map(function (e) { return e[0]; }); }
      if (pos * SIZE >= rows.length) pos = Math.max(0, Math.ceil(rows.length / SIZE) - 1);
      pageLine(rows.length, " found"); if (!rows.length) { empty(); return; }
      render(rows.slice(pos * SIZE, (pos + 1) * SIZE)); }); }
  function empty() { box.textContent = ""; box.appendChild(el("p", "No item matches the filters.", "note")); }
  function why(explain) { return Object.keys(explain || {}).map(function (k) { return k + ": " + explain[k]; }).join(" · "); }
  function render(rows) {
    box.textContent = "";
    rows.forEach(function (r) { if (!r) return; var models = M.models[r.component] || [];
      var item = el("div", null, "item"); item.setAttribute("data-item", r.id);
      var left = el("div"); if (r.image) { var img = el("img"); img.src = r.image; img.alt = "image of item " + r.id; img.loading = "lazy";
        img.title = "click to enlarge"; img.addEventListener("click", function () { enlarge(r); }); left.appendChild(img); }
      item.appendChild(left); var right = el("div");
      var tags = el("div"); [r.component, r.task, r.group, r.tier, r.id].forEach(function (t) { if (t) tags.appendChild(el("span", t, "tag")); }); right.appendChild(tags);
      right.appendChild(el("div", r.question, "q"));
      if (r.options.length) { var ol = el("ol", null, "opts"); ol.type = "A"; r.options.forEach(function (o) { ol.appendChild(el("li", o)); }); right.appendChild(ol); }
      var g = el("div"); g.appendChild(el("span", "gold: ")); g.appendChild(el("span", r.gold, "gold")); right.appendChild(g);
      var t = el("table", null, "replies"), head = el("tr"); ["model", "status", "reply", "parsed", "score", "why this score"].forEach(function (x) { head.appendChild(el("th", x)); }); t.appendChild(head);
      models.forEach(function (m, i) { var rep = r.replies[i], tr = el("tr"); tr.appendChild(el("td", m));
        if (rep) { tr.appendChild(el("td", rep[0])); tr.appendChild(el("td", rep[1], "reply")); tr.appendChild(el("td", rep[2])); tr.appendChild(el("td", rep[3] === null ? "—" : rep[3].toFixed(3))); tr.appendChild(el("td", why(rep[4]), "why")); }
        else { tr.appendChild(el("td", "not scored")); }
        t.appendChild(tr); });
      right.appendChild(t); item.appendChild(right); box.appendChild(item); });
    if (!box.firstChild) box.appendChild(el("p", "This page holds no item.", "note"));
  }
  var overlay = byId("overlay");
  function enlarge(r) { byId("overlay-img").src = r.large || r.image; byId("overlay-img").alt = "image of item " + r.id;
    byId("overlay-cap").textContent = r.id + " — click or press Esc to close"; overlay.hidden = false; }
  overlay.addEventListener("click", function () { overlay.hidden = true; });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") overlay.hidden = true; });
  byId("prev").addEventListener("click", function () { if (pos > 0) { pos -= 1; show(); } });
  byId("next").addEventListener("click", function () { pos += 1; show(); });
  show(); started = true;
  // a linked view (#browser?…) opens the browser on its own; "full report" shows everything again
  if (location.hash.indexOf("#browser") === 0) document.body.className = "browser-only";
  byId("full").addEventListener("click", function () { document.body.className = ""; });
})();
</script>
</body></html>
"""


def render_page(context: dict[str, Any]) -> str:
    """The report page for ``context`` (autoescaped; values marked safe are pre-rendered tables)."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(PAGE).render(**context)
