// Sample browser and side-by-side view of index.html. Data come from the JSON script elements
// blocks of the page; every piece of it reaches the page through textContent, never as HTML.
(function () {
  "use strict";
  var PAGE = 50;

  function readJSON(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  var META = readJSON("report-data");
  var RUNS = META.runs.filter(function (r) { return !r.dry_run; });
  var byRef = {};
  RUNS.forEach(function (r) { byRef[r.ref] = r; });
  var cache = {};
  var prompts = null;

  // Parsed lazily, one run at a time: thousands of samples x many runs stay cheap until looked at.
  function samplesOf(ref) {
    if (!cache[ref]) {
      var block = readJSON("samples-" + ref);
      var f = block.fields;
      cache[ref] = block.rows.map(function (row, i) {
        var s = { order: i, hay: null };
        for (var j = 0; j < f.length; j++) s[f[j]] = row[j];
        s.diff = s.prediction == null || s.label == null ? null : Math.abs(s.prediction - s.label);
        return s;
      });
    }
    return cache[ref];
  }

  function promptText(i) {
    if (prompts === null) prompts = readJSON("prompts") || [];
    return prompts[i] || "";
  }

  function haystack(s) {
    if (s.hay === null) {
      s.hay = [s.id, s.output || "", s.error || "", s.refusal || "", s.reasoning || "", promptText(s.prompt)].join("\n").toLowerCase();
    }
    return s.hay;
  }

  function h(tag, props, children) {
    var el = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      if (k === "text") el.textContent = props[k];
      else if (k === "cls") el.className = props[k];
      else el.setAttribute(k, props[k]);
    });
    (children || []).forEach(function (c) {
      if (c !== null) el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return el;
  }

  function num(v) { return v == null ? "–" : Number(v).toFixed(2); }
  function count(n) { return Number(n).toLocaleString("en-US"); }
  function badge(code) {
    var name = code == null ? "none" : String(code);
    return h("span", { cls: "reason reason-" + name.replace(/[^a-z-]/g, ""), text: name });
  }
  function option(value, label) { return h("option", { value: value, text: label }); }
  function runLabel(r) { return r.ref + " · " + r.row + " · " + r.group + " · " + r.instr + ", k=" + r.shots; }

  function replyCell(s, withPrompt) {
    var parts = [h("pre", { cls: "reply", text: s.output == null ? "(no reply)" : s.output })];
    if (s.error) parts.push(h("pre", { cls: "error", text: "error: " + s.error }));
    if (s.refusal) parts.push(h("div", { cls: "meta", text: "refusal: " + s.refusal }));
    if (s.reasoning) {  // the thought, folded under the answer the first-number rule read
      parts.push(h("details", { cls: "thought" }, [
        h("summary", { text: "thought (" + count(s.reasoning.length) + " characters)" }),
        h("pre", { cls: "reasoning", text: s.reasoning }),
      ]));
    }
    var meta = [];
    if (s.served_model) meta.push("served by " + s.served_model);
    if (s.input_tokens != null) meta.push("tokens " + s.input_tokens + " in / " + s.output_tokens + " out");
    if (s.reasoning_tokens) meta.push(s.reasoning_tokens + " of them reasoning");
    if (meta.length) parts.push(h("div", { cls: "meta", text: meta.join(" · ") }));
    if (withPrompt) {
      var pre = h("pre", { cls: "prompt" });
      var details = h("details", {}, [h("summary", { text: "prompt" }), pre]);
      details.addEventListener("toggle", function () {
        if (details.open && !pre.textContent) pre.textContent = promptText(s.prompt);
      });
      parts.push(details);
    }
    return h("td", { cls: "text" }, parts);
  }

  function pager(prefix, state, total) {
    var pages = Math.max(1, Math.ceil(total / PAGE));
    if (state.page >= pages) state.page = pages - 1;
    var first = total ? state.page * PAGE + 1 : 0;
    var last = Math.min(total, (state.page + 1) * PAGE);
    document.getElementById(prefix + "-page").textContent =
      first + "–" + last + " of " + count(total) + " (page " + (state.page + 1) + " of " + pages + ")";
    document.getElementById(prefix + "-prev").disabled = state.page === 0;
    document.getElementById(prefix + "-next").disabled = state.page >= pages - 1;
    return [first - 1, last];
  }

  function wirePager(prefix, state, render) {
    document.getElementById(prefix + "-prev").addEventListener("click", function () { state.page--; render(); });
    document.getElementById(prefix + "-next").addEventListener("click", function () { state.page++; render(); });
  }

  function debounce(fn) {
    var t = null;
    return function () { clearTimeout(t); t = setTimeout(fn, 150); };
  }

  // --- one run's samples -------------------------------------------------------------------------
  var sb = { page: 0 };
  var sbRun = document.getElementById("sb-run");

  function sbRender() {
    var ref = sbRun.value;
    var tbody = document.querySelector("#sb-table tbody");
    var summary = document.getElementById("sb-summary");
    if (!ref) {
      summary.textContent = "No run with answers.";
      tbody.replaceChildren();
      return;
    }
    var reason = document.getElementById("sb-reason").value;
    var errors = document.getElementById("sb-error").value;
    var sort = document.getElementById("sb-sort").value;
    var query = document.getElementById("sb-search").value.trim().toLowerCase();
    var rows = samplesOf(ref).filter(function (s) {
      if (reason && s.reason !== reason) return false;
      if (errors === "only" && !s.error) return false;
      if (errors === "none" && s.error) return false;
      return !query || haystack(s).indexOf(query) >= 0;
    });
    if (sort !== "id") {
      var sign = sort === "diff-desc" ? -1 : 1;
      rows.sort(function (a, b) {
        if (a.diff == null || b.diff == null) return (a.diff == null) - (b.diff == null) || a.order - b.order;
        return sign * (a.diff - b.diff) || a.order - b.order;
      });
    }
    var r = byRef[ref];
    summary.textContent = runLabel(r) + " — n=" + count(r.n) + ", errors=" + count(r.errors) + ", invalid " +
      num(r.invalid_pct) + "%, Spearman " + num(r.spearman) + ". " + count(rows.length) + " of " +
      count(samplesOf(ref).length) + " samples match.";
    summary.setAttribute("data-count", String(rows.length));
    var span = pager("sb", sb, rows.length);
    var frag = document.createDocumentFragment();
    rows.slice(span[0], span[1]).forEach(function (s) {
      frag.appendChild(h("tr", { "data-id": String(s.id), "data-reason": String(s.reason) }, [
        h("td", { text: String(s.id) }), h("td", { text: num(s.label) }), h("td", { text: num(s.prediction) }),
        h("td", { text: num(s.parsed) }), h("td", { text: num(s.diff) }), h("td", {}, [badge(s.reason)]),
        h("td", { text: s.finish_reason == null ? "–" : String(s.finish_reason) }), replyCell(s, true),
      ]));
    });
    tbody.replaceChildren(frag);
  }

  function sbReasons() {
    var select = document.getElementById("sb-reason");
    var keep = select.value;
    var codes = META.reasons.slice();
    samplesOf(sbRun.value).forEach(function (s) {
      if (s.reason != null && codes.indexOf(s.reason) < 0) codes.push(s.reason);
    });
    var tally = {};
    samplesOf(sbRun.value).forEach(function (s) { tally[s.reason] = (tally[s.reason] || 0) + 1; });
    select.replaceChildren(option("", "all"));
    codes.forEach(function (c) { select.appendChild(option(c, c + " (" + count(tally[c] || 0) + ")")); });
    select.value = codes.indexOf(keep) >= 0 ? keep : "";
  }

  // --- two runs on the same items ----------------------------------------------------------------
  var sx = { page: 0 };
  var sxA = document.getElementById("sx-a");
  var sxB = document.getElementById("sx-b");

  function partners(ref) {
    return RUNS.filter(function (r) { return r.ref !== ref && r.items === byRef[ref].items; });
  }

  function sxFillB() {
    var keep = sxB.value;
    sxB.replaceChildren();
    partners(sxA.value).forEach(function (r) { sxB.appendChild(option(r.ref, runLabel(r))); });
    if (keep && byRef[keep] && byRef[keep].items === byRef[sxA.value].items && keep !== sxA.value) sxB.value = keep;
  }

  function sxRender() {
    var tbody = document.querySelector("#sx-table tbody");
    var summary = document.getElementById("sx-summary");
    if (!sxA.value || !sxB.value) {
      summary.textContent = sxA.value ? "No other run was asked the same items as " + sxA.value + "." :
        "No run with answers.";
      tbody.replaceChildren();
      pager("sx", sx, 0);
      return;
    }
    var b = {};
    samplesOf(sxB.value).forEach(function (s) { b[s.id] = s; });
    var filter = document.getElementById("sx-filter").value;
    var query = document.getElementById("sx-search").value.trim().toLowerCase();
    var all = samplesOf(sxA.value).map(function (a) {
      var t = b[a.id];
      var d = a.prediction == null || t.prediction == null ? null : Math.abs(a.prediction - t.prediction);
      return { a: a, b: t, d: d };
    });
    var agree = all.filter(function (p) { return p.d === 0; }).length;
    var withD = all.filter(function (p) { return p.d != null; });
    var mean = withD.reduce(function (acc, p) { return acc + p.d; }, 0) / (withD.length || 1);
    var rows = all.filter(function (p) {
      if (filter === "validity" && (p.a.reason === "number") === (p.b.reason === "number")) return false;
      if (filter === "differ" && p.d === 0) return false;
      if (!query) return true;
      return (String(p.a.id) + "\n" + (p.a.output || "") + "\n" + (p.b.output || "")).toLowerCase().indexOf(query) >= 0;
    });
    rows.sort(function (x, y) {
      if (x.d == null || y.d == null) return (y.d == null) - (x.d == null) || x.a.order - y.a.order;
      return y.d - x.d || x.a.order - y.a.order;
    });
    summary.textContent = count(all.length) + " items; the same prediction on " + count(agree) +
      "; mean |A − B| " + num(mean) + " over " + count(withD.length) + " items both answered. " +
      count(rows.length) + " shown, where they disagree most first.";
    summary.setAttribute("data-count", String(rows.length));
    var span = pager("sx", sx, rows.length);
    var frag = document.createDocumentFragment();
    rows.slice(span[0], span[1]).forEach(function (p) {
      frag.appendChild(h("tr", { "data-id": String(p.a.id) }, [
        h("td", { text: String(p.a.id) }), h("td", { text: num(p.a.label) }), h("td", { text: num(p.a.prediction) }),
        h("td", {}, [badge(p.a.reason)]), h("td", { text: num(p.b.prediction) }), h("td", {}, [badge(p.b.reason)]),
        h("td", { text: num(p.d) }), replyCell(p.a, true), replyCell(p.b, false),
      ]));
    });
    tbody.replaceChildren(frag);
  }

  // --- wiring ------------------------------------------------------------------------------------
  RUNS.forEach(function (r) {
    sbRun.appendChild(option(r.ref, runLabel(r)));
    sxA.appendChild(option(r.ref, runLabel(r)));
  });
  var firstPair = RUNS.filter(function (r) { return partners(r.ref).length; })[0];
  if (firstPair) sxA.value = firstPair.ref;
  if (sbRun.value) sbReasons();
  sxFillB();

  function sbReset() { sb.page = 0; sbRender(); }
  function sxReset() { sx.page = 0; sxRender(); }
  sbRun.addEventListener("change", function () { sbReasons(); sbReset(); });
  ["sb-reason", "sb-error", "sb-sort"].forEach(function (id) {
    document.getElementById(id).addEventListener("change", sbReset);
  });
  document.getElementById("sb-search").addEventListener("input", debounce(sbReset));
  sxA.addEventListener("change", function () { sxFillB(); sxReset(); });
  [sxB, document.getElementById("sx-filter")].forEach(function (el) { el.addEventListener("change", sxReset); });
  document.getElementById("sx-search").addEventListener("input", debounce(sxReset));
  wirePager("sb", sb, sbRender);
  wirePager("sx", sx, sxRender);
  sbRender();
  sxRender();
})();
