// The timeline page of `sluice lsm --html`: the JSON of `sluice lsm --json` is embedded above;
// the levels at a step are rebuilt by replaying edits (checkpoints every K edits make a jump
// cost at most K edits), the series are drawn once and only the cursor moves.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("lsm-data").textContent);
  const NL = 7, K = 512;
  const KINDS = ["snapshot", "flush", "flushable_ingest", "ingest", "compaction", "move", "other"];
  const COLOR = ["#8c8c8c", "#1f77b4", "#17becf", "#2ca02c", "#9467bd", "#ff7f0e", "#bbbbbb"];
  const KIND_OF = Object.fromEntries(KINDS.map((k, i) => [k, i]));
  const MOVE = KIND_OF.move;
  const E = D.edits.length, F = D.files.length;
  const NK = Math.max(D.keys.length, 2);
  const $ = (id) => document.getElementById(id);

  // Files as typed arrays.
  const fLo = new Float64Array(F), fHi = new Float64Array(F), fSize = new Float64Array(F);
  const fSeq = new Float64Array(F), fNum = new Float64Array(F);
  const fKind = new Uint8Array(F), fWide = new Uint8Array(F), fHx = new Uint8Array(F);
  let maxSize = 1;
  D.files.forEach((f, i) => {
    fLo[i] = f.lo; fHi[i] = f.hi; fSize[i] = f.size; fSeq[i] = f.seqnos[1]; fNum[i] = f.number;
    fKind[i] = KIND_OF[f.kind] ?? KIND_OF.other; fWide[i] = f.wide ? 1 : 0;
    fHx[i] = f.hi_exclusive ? 1 : 0; if (f.size > maxSize) maxSize = f.size;
  });
  const logMax = Math.log2(1 + maxSize);

  // Replay state: per level a Map fid -> arrival kind at that level.
  let levels = [], cur = -1;
  const reset = () => { levels = Array.from({ length: NL }, () => new Map()); cur = -1; };
  function apply(i) {
    const e = D.edits[i];
    const gone = new Set();
    for (const [l, fid] of e.deleted) { levels[l].delete(fid); gone.add(fid); }
    for (const a of e.added) levels[a[0]].set(a[1], gone.has(a[1]) ? MOVE : fKind[a[1]]);
    cur = i;
  }
  // checkpoints[c]: the levels before edit c*K, flattened as [fid, kind, ...] per level.
  const checkpoints = [];
  reset();
  for (let i = 0; i < E; i++) {
    if (i % K === 0) checkpoints.push(levels.map((m) => Int32Array.from([...m].flat())));
    apply(i);
  }
  function restore(c) {
    reset();
    checkpoints[c].forEach((flat, l) => {
      for (let j = 0; j < flat.length; j += 2) levels[l].set(flat[j], flat[j + 1]);
    });
    cur = c * K - 1;
  }
  function seek(s) {
    s = Math.max(0, Math.min(E - 1, s));
    if (!(s >= cur && s - cur <= K)) restore(Math.floor(s / K));
    while (cur < s) apply(cur + 1);
  }

  // L0 sublevels of the current L0 (the engine's rule: 1 + highest sublevel of any older
  // overlapping file; older = smaller largest seqno, then smaller number).
  function sublevels() {
    const ids = [...levels[0].keys()];
    ids.sort((a, b) => fSeq[a] - fSeq[b] || fNum[a] - fNum[b]);
    const sub = new Map();
    let count = 0;
    ids.forEach((f, i) => {
      let s = 0;
      for (let j = 0; j < i; j++) {
        const g = ids[j];
        const apart = fHi[g] < fLo[f] || (fHi[g] === fLo[f] && fHx[g]) ||
          fHi[f] < fLo[g] || (fHi[f] === fLo[g] && fHx[f]);
        if (!apart) s = Math.max(s, sub.get(g) + 1);
      }
      sub.set(f, s);
      count = Math.max(count, s + 1);
    });
    return { sub, count };
  }

  // Drawing of the levels.
  const canvas = $("lsm"), ctx = canvas.getContext("2d");
  const LABEL = 64;
  let boxes = [], signature = "", drawn = 0;
  const fmtB = (b) => b >= 1 << 30 ? (b / (1 << 30)).toFixed(2) + " GiB" : b >= 1 << 20 ?
    (b / (1 << 20)).toFixed(1) + " MiB" : b >= 1024 ? (b / 1024).toFixed(1) + " KiB" : b + " B";
  function fit(c) {
    const r = c.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    const w = Math.max(200, Math.round(r.width)), h = Math.max(60, Math.round(r.height));
    if (c.width !== w * dpr || c.height !== h * dpr) { c.width = w * dpr; c.height = h * dpr; }
    const x = c.getContext("2d"); x.setTransform(dpr, 0, 0, dpr, 0, 0);
    return [w, h];
  }
  function draw() {
    const [W, H] = fit(canvas);
    ctx.clearRect(0, 0, W, H);
    const { sub, count } = sublevels();
    const rows = [];
    for (let s = count - 1; s >= 0; s--) rows.push({ label: "L0." + s, level: 0, sub: s });
    if (count === 0) rows.push({ label: "L0", level: 0, sub: -1 });
    for (let l = 1; l < NL; l++) rows.push({ label: "L" + l, level: l, sub: -1 });
    const rh = Math.max(4, Math.min(30, (H - 8) / rows.length));
    const plotW = W - LABEL - 8;
    const e = cur >= 0 ? D.edits[cur] : null;
    const added = new Set(e ? e.added.map((a) => a[1]) : []);
    boxes = [];
    const sig = [];
    ctx.font = "11px system-ui, sans-serif";
    rows.forEach((r, ri) => {
      const y = 4 + ri * rh;
      ctx.fillStyle = ri % 2 ? "#fff" : "#f4f6f8";
      ctx.fillRect(0, y, W, rh);
      ctx.fillStyle = "#333";
      if (rh >= 9) ctx.fillText(r.label, 4, y + Math.min(rh - 2, 12));
      for (const [fid, kind] of levels[r.level]) {
        if (r.level === 0 && sub.get(fid) !== r.sub) continue;
        const x0 = LABEL + (fLo[fid] / (NK - 1)) * plotW;
        const w = Math.max(2, ((fHi[fid] - fLo[fid]) / (NK - 1)) * plotW);
        const a = 0.25 + 0.75 * (Math.log2(1 + fSize[fid]) / logMax);
        ctx.globalAlpha = a;
        ctx.fillStyle = COLOR[kind];
        ctx.fillRect(x0, y + 1, w, rh - 2);
        ctx.globalAlpha = 1;
        if (added.has(fid)) { ctx.strokeStyle = "#000"; ctx.lineWidth = 1.5; ctx.strokeRect(x0, y + 1, w, rh - 2); }
        if (fWide[fid]) {
          ctx.strokeStyle = "#d62728"; ctx.lineWidth = 2; ctx.strokeRect(x0, y + 1, w, rh - 2);
          ctx.fillStyle = "#d62728"; ctx.fillText("⚑", x0 + 2, y + Math.min(rh - 2, 12));
        }
        boxes.push([x0, y, w, rh, fid, r.level, r.sub]);
        sig.push(fid, r.level, r.sub);
      }
    });
    signature = sig.join(",");
    drawn++;
    const p = Math.max(cur, 0);
    const ser = D.series;
    $("stepinfo").textContent = E ? `edit ${p + 1}/${E} · ${e ? e.kind : ""} · read amp ` +
      `${ser.read_amp[p]} · L0 ${ser.l0_files[p]} files, ${ser.l0_sublevels[p]} sublevels` : "no edits";
    $("slider").value = p;
    details(p);
    moveCursors(p);
  }

  function fileLine(fid, level, subl) {
    const f = D.files[fid];
    const where = "L" + level + (subl != null && subl >= 0 ? "." + subl : "");
    return `<tr><td>${where}</td><td>#${f.number}</td><td>${fmtB(f.size)}</td>` +
      `<td>${esc(D.keys[f.lo])} … ${esc(D.keys[f.hi])}</td><td>seq ${f.seqnos[0]}–${f.seqnos[1]}</td>` +
      `<td>${f.wide ? '<span class="wide">wide ⚑</span>' : ""}</td></tr>`;
  }
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]));
  function details(i) {
    const e = D.edits[i];
    if (!e) { $("details").textContent = "no edits"; return; }
    let h = `<h3>edit ${i + 1}: ${e.kind}</h3><div>MANIFEST offset ${e.offset}` +
      (e.last_sequence != null ? ` · last seq ${e.last_sequence}` : "") +
      (e.log_number != null ? ` · log ${e.log_number}` : "") + "</div>";
    h += `<div>bytes in ${fmtB(e.bytes_in)} → out ${fmtB(e.bytes_out)}</div>`;
    if (e.deleted.length) h += "<h3>inputs</h3><table>" + e.deleted.map(([l, f]) => fileLine(f, l)).join("") + "</table>";
    if (e.added.length) h += "<h3>outputs</h3><table>" + e.added.map(([l, f, s]) => fileLine(f, l, s)).join("") + "</table>";
    if (e.notes) h += "<h3>notes</h3>" + e.notes.map(esc).join("<br>");
    $("details").innerHTML = h;
  }

  // Hover and click on files.
  function hit(ev) {
    const r = canvas.getBoundingClientRect(), x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (let j = boxes.length - 1; j >= 0; j--) {
      const b = boxes[j];
      if (x >= b[0] - 1 && x <= b[0] + b[2] + 1 && y >= b[1] && y <= b[1] + b[3]) return [b, x, y];
    }
    return null;
  }
  canvas.addEventListener("mousemove", (ev) => {
    const h = hit(ev), tip = $("tip");
    if (!h) { tip.hidden = true; return; }
    const [b, x, y] = h, f = D.files[b[4]];
    tip.innerHTML = `file #${f.number} · L${b[5]}${b[6] >= 0 ? "." + b[6] : ""} · ${fmtB(f.size)} · ` +
      `${KINDS[levels[b[5]].get(b[4])]}${f.wide ? ' · <span class="wide">wide ⚑</span>' : ""}<br>` +
      `${esc(D.keys[f.lo])} … ${esc(D.keys[f.hi])}<br>seq ${f.seqnos[0]}–${f.seqnos[1]} · added by edit ${f.edit + 1}`;
    tip.style.left = Math.min(x + 12, canvas.clientWidth - 300) + "px";
    tip.style.top = y + 14 + "px";
    tip.hidden = false;
  });
  canvas.addEventListener("mouseleave", () => { $("tip").hidden = true; });
  canvas.addEventListener("click", (ev) => { const h = hit(ev); if (h) goTo(D.files[h[0][4]].edit); });

  // Charts: drawn once per size, a cursor canvas on top of each.
  const LB = D.series.level_bytes;
  const CHARTS = [
    { title: "read amplification (L0 sublevels + non-empty levels)", lines: [[D.series.read_amp, "#d62728", "read amp"]] },
    { title: "L0 files and sublevels", lines: [[D.series.l0_files, "#1f77b4", "files"], [D.series.l0_sublevels, "#ff7f0e", "sublevels"]] },
    { title: "bytes per level", lines: LB.map((s, l) => [s, ["#333", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b"][l], "L" + l]), bytes: true },
    { title: "bytes written (cumulative)", lines: [[D.series.flush_written, COLOR[1], "flush"], [D.series.compaction_written, COLOR[4], "compaction"], [D.series.ingest_written, COLOR[3], "ingest"]], bytes: true },
  ];
  const cursors = [];
  CHARTS.forEach((c) => {
    const div = document.createElement("div");
    div.className = "chart";
    div.innerHTML = `<h4>${c.title}</h4><div class="keys">` + c.lines.map(([, col, n]) => `<i style="color:${col}">━</i> ${n}`).join(" &nbsp;") +
      `</div><canvas class="plot"></canvas><canvas class="cursor"></canvas>`;
    $("charts").appendChild(div);
    c.plot = div.querySelector(".plot"); c.cursor = div.querySelector(".cursor");
    c.cursor.addEventListener("click", (ev) => {
      const r = c.cursor.getBoundingClientRect();
      goTo(Math.round(((ev.clientX - r.left - 40) / (r.width - 48)) * (E - 1)));
    });
    cursors.push(c);
  });
  function drawCharts() {
    for (const c of CHARTS) {
      const [W, H] = fit(c.plot), g = c.plot.getContext("2d");
      fit(c.cursor);
      g.clearRect(0, 0, W, H);
      let max = 1;
      for (const [s] of c.lines) for (let i = 0; i < s.length; i++) if (s[i] > max) max = s[i];
      const pw = W - 48, ph = H - 16, X = (i) => 40 + (E > 1 ? (i / (E - 1)) * pw : 0), Y = (v) => 6 + ph - (v / max) * ph;
      g.fillStyle = "#666"; g.font = "10px system-ui, sans-serif";
      g.fillText(c.bytes ? fmtB(max) : String(max), 2, 12); g.fillText("0", 2, 6 + ph);
      g.strokeStyle = "#ddd"; g.beginPath(); g.moveTo(40, 6 + ph); g.lineTo(40 + pw, 6 + ph); g.stroke();
      for (const [s, col] of c.lines) {
        // One vertical min-max segment per pixel column: 100,000 points draw as ~W segments.
        g.strokeStyle = col; g.lineWidth = 1.2; g.beginPath();
        const cols = Math.max(1, Math.floor(pw));
        for (let px = 0; px <= cols; px++) {
          const a = Math.floor((px / (cols + 1)) * E), b = Math.max(a + 1, Math.floor(((px + 1) / (cols + 1)) * E));
          let lo = Infinity, hi = -Infinity;
          for (let i = a; i < b && i < E; i++) { if (s[i] < lo) lo = s[i]; if (s[i] > hi) hi = s[i]; }
          if (lo === Infinity) continue;
          const x = 40 + px;
          if (px === 0) g.moveTo(x, Y(s[a])); else g.lineTo(x, Y(lo));
          g.lineTo(x, Y(hi));
        }
        g.stroke();
      }
      c.X = X;
    }
  }
  function moveCursors(p) {
    for (const c of cursors) {
      const g = c.cursor.getContext("2d"), W = c.cursor.width, H = c.cursor.height;
      g.setTransform(1, 0, 0, 1, 0, 0); g.clearRect(0, 0, W, H);
      const dpr = window.devicePixelRatio || 1; g.setTransform(dpr, 0, 0, dpr, 0, 0);
      if (!c.X) continue;
      g.strokeStyle = "#d62728"; g.lineWidth = 1; g.beginPath();
      g.moveTo(c.X(p), 0); g.lineTo(c.X(p), H / dpr); g.stroke();
    }
  }

  // Controls.
  function goTo(s) { if (E) seek(s); draw(); }
  let pending = null;
  $("slider").max = Math.max(0, E - 1);
  $("slider").addEventListener("input", (ev) => {
    pending = +ev.target.value;
    requestAnimationFrame(() => { if (pending != null) { goTo(pending); pending = null; } });
  });
  $("prev").onclick = () => goTo(cur - 1);
  $("next").onclick = () => goTo(cur + 1);
  function nextWide() {
    for (let i = cur + 1; i < E; i++) if (D.edits[i].added.some((a) => fWide[a[1]])) return goTo(i);
  }
  $("nextwide").onclick = nextWide;
  document.addEventListener("keydown", (ev) => {
    const step = { ArrowRight: 1, ArrowLeft: -1, PageDown: 100, PageUp: -100 }[ev.key];
    if (step) { goTo(cur + step); ev.preventDefault(); }
    else if (ev.key === "Home") goTo(0);
    else if (ev.key === "End") goTo(E - 1);
    else if (ev.key === "w") nextWide();
  });
  window.addEventListener("resize", () => { drawCharts(); draw(); });

  // Header, legend, options.
  const cfs = D.column_families.map((c) => c.name + (c.drawn ? " (drawn)" : "") + `: ${c.edits} edits`).join(", ");
  $("title").textContent = `${D.source} · ${D.manifest}`;
  $("meta").textContent = `${E} edits · ${F} files · ${D.keys.length} distinct boundary keys (x = key order) · ` +
    `keys ${D.key_decoding.mode}${D.key_decoding.why ? " (" + D.key_decoding.why + ")" : ""} · column families: ${cfs}` +
    (D.torn_tail ? ` · torn tail at ${D.torn_tail.offset}` : "");
  $("legend").innerHTML = KINDS.map((k, i) => `<span><i style="background:${COLOR[i]}"></i>${k.replace("_", " ")}</span>`).join("") +
    '<span class="wide">⚑ small but key-wide file</span><span>shade ∝ bytes · black outline: added by this edit</span>';
  $("options").innerHTML = (D.options.file ? `<tr><td colspan=3>${esc(D.options.file)}</td></tr>` : "") +
    D.options.settings.map(([s, k, v]) => `<tr><td>${esc(s)}</td><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join("");

  drawCharts();
  goTo(E - 1);
  // For tests and measurements (tests/interop/test_lsm_html.py).
  window.lsm = {
    edits: E, goTo, step: () => cur, signature: () => signature, drawn: () => drawn,
    wideShown: () => boxes.filter((b) => fWide[b[4]]).map((b) => D.files[b[4]].number),
    readyMs: performance.now(),
  };
})();
