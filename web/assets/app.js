// app.js: the workshop page. Four views, by the address's hash: the
// debate (#/), a story (#/story/NAME), the sweep (#/sweep), the hunt
// (#/hunt) and the cost view (#/cost). The live stream (/api/live) sends the
// run in progress, its timeline drawn by the server with report.html's
// code; this script only places it. Every string from the server goes in
// as text, except the timeline's SVG, which the server escapes itself.
"use strict";

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs = {}, ...kids) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
};

const ui = {
  stories: new Map(), // name -> story
  debate: null,
  live: null, // the last message of the live stream
  view: null, // "debate", "sweep" or a story's name
  sweeps: [], // the sweep presets
  hunts: [], // the hunt presets
  costs: [], // the cost presets
  countdown: null,
};

async function api(path, body) {
  const opt = body === undefined ? {} : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  const r = await fetch(path, opt);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || r.statusText);
  return data;
}

// ---- switches: predict and high contrast, kept across reloads ----

function setting(id, cls) {
  const box = $("#" + id);
  box.checked = localStorage.getItem("locksim." + id) === "1";
  const apply = () => {
    localStorage.setItem("locksim." + id, box.checked ? "1" : "0");
    if (cls) document.body.classList.toggle(cls, box.checked);
    render();
  };
  box.addEventListener("change", apply);
  if (cls) document.body.classList.toggle(cls, box.checked);
  return box;
}

// ---- verdict badges ----

// expectedBadge shows a story's expected verdict, or "?" while the
// predict switch hides it and the story has not run in this session.
function expectedBadge(name) {
  const s = ui.stories.get(name);
  const ran = ui.live && ui.live.verdicts && ui.live.verdicts[name];
  if ($("#predict").checked && !ran) return el("span", { class: "badge hidden-verdict", title: "predict: the expected verdict shows once the story has run", text: "?" });
  const b = el("span", { class: "badge " + s.expected, title: "expected verdict", text: s.expected });
  return b;
}

function ranBadge(name) {
  const v = ui.live && ui.live.verdicts && ui.live.verdicts[name];
  return v ? el("span", { class: "badge ran " + v, title: "the verdict of its run here", text: "ran: " + v }) : null;
}

// ---- the debate page ----

function renderDebate(main) {
  const d = ui.debate;
  main.append(el("h1", { text: "The Redlock debate, claim by claim" }),
    el("p", { class: "muted", text: "Each claim with its exact words and where they are; beside it, the stories that show it on real servers. Click a story to run it." }));
  const cols = el("div", { class: "columns" });
  for (const side of d.sides) {
    const col = el("section", { class: "column", id: "side-" + side.id }, el("h2", { text: side.title }), el("p", { class: "who", text: side.who }));
    for (const c of d.claims.filter((c) => c.side === side.id)) {
      const card = el("article", { class: "claim" }, el("h3", { text: c.claim }));
      if (c.quote) card.append(el("blockquote", { text: "“" + c.quote + "”" }));
      else card.append(el("div", { class: "summary" }, el("small", { text: "the catalogue's summary (not a quotation):" }), c.summary));
      const cite = el("cite", {}, c.source || side.who);
      if (c.section) cite.append(", section “" + c.section + "”");
      if (c.address) cite.append(", ", el("a", { href: c.address, rel: "noreferrer", text: c.address }));
      card.append(cite);
      const list = el("div", { class: "stories" });
      for (const name of c.stories) {
        list.append(el("a", { class: "story-link", href: "#/story/" + name }, name, expectedBadge(name), ranBadge(name)));
      }
      card.append(list);
      col.append(card);
    }
    cols.append(col);
  }
  main.append(cols);
  const others = [...ui.stories.values()].filter((s) => s.scripted);
  main.append(el("h2", { text: "Every story" }));
  const ul = el("ul", { class: "story-list" });
  for (const s of others) ul.append(el("li", {}, el("a", { href: "#/story/" + s.name, text: s.name }), " ", expectedBadge(s.name)));
  main.append(ul);
}

// ---- the story page ----

function renderStory(main, name) {
  const s = ui.stories.get(name);
  if (!s) {
    main.append(el("p", { class: "error", text: "No story named " + name + " in the catalogue." }));
    return;
  }
  main.append(el("div", { class: "story-head" }, el("h1", {}, el("code", { text: s.name })), el("span", { class: "muted", id: "expected" }, "expected ", expectedBadge(s.name))));
  main.append(el("p", { id: "title", text: s.title }));
  const btn = (id, label, key, cls, fn) => el("button", { id, class: cls || "", onclick: fn, title: "key " + key }, label, el("kbd", { text: key }));
  main.append(el("div", { class: "buttons" },
    btn("run", "Run", "r", "primary", () => start("run")),
    btn("step", "Step", "s", "", () => start("step")),
    btn("next", "Next step", "space", "", next),
    btn("cf", "Counterfactual", "c", "", () => start("counterfactual")),
    btn("stop", "Stop", "Esc", "", stop)));
  main.append(el("div", { id: "status" }));
  const grid = el("div", { class: "grid" });
  const left = el("div", { class: "card" }, el("h3", { text: "The story" }));
  for (const p of s.explain.split(/\n\s*\n/)) if (p.trim()) left.append(el("p", { text: p.trim() }));
  left.append(el("p", { class: "source" }, el("b", { text: "Source: " }), s.source));
  if (s.counterfactual) left.append(el("p", { class: "source" }, el("b", { text: "Counterfactual: " }), s.counterfactual + " (it must end " + s.counterfactual_expected + ")"));
  const right = el("div", { class: "card" }, el("h3", { text: "Steps" }));
  const ol = el("ol", { class: "steps", id: "steps" });
  s.steps.forEach((st, i) => ol.append(el("li", { "data-i": String(i) }, st.say ? st.say + " " : "", el("span", { class: "do", text: st.do }))));
  right.append(ol, el("pre", { id: "state" }));
  grid.append(left, right);
  main.append(grid);
  main.append(el("div", { id: "result" }));
  main.append(el("h2", { text: "Timeline" }), el("div", { class: "timeline-wrap", id: "timeline" }, el("p", { class: "muted", text: "Run the story: the timeline is drawn as the events are recorded." })));
  main.append(el("div", { id: "cf-block", hidden: "" }, el("h2", { text: "Counterfactual: " + (s.counterfactual || "") }), el("div", { class: "timeline-wrap", id: "cf-timeline" })));
  main.append(el("h2", { text: "Narration" }), el("pre", { id: "narration" }));
  updateStory();
}

// updateStory places the live run on the story page, when it is this
// story's.
function updateStory() {
  const name = ui.view;
  const m = ui.live;
  const r = m && m.run && m.run.story === name ? m.run : null;
  const busy = busyWith();
  const running = busy !== "";
  const status = $("#status");
  if (!status || !ui.stories.has(name)) return;
  $("#expected").replaceChildren("expected ", expectedBadge(name), " ", ranBadge(name) || "");
  for (const id of ["run", "step", "cf"]) $("#" + id).disabled = running;
  $("#cf").disabled = running || !ui.stories.get(name).counterfactual;
  $("#stop").disabled = !running;
  $("#next").disabled = !(r && r.state === "waiting");
  clearInterval(ui.countdown);
  status.className = "";
  if (busy === "sweep" || busy === "hunt" || busy === "cost") {
    status.textContent = busyWords(busy) + " is running. Stop it there first.";
    return;
  }
  if (running && !r) {
    status.textContent = "Another story is running: " + m.run.story + " (" + m.run.mode + "). Stop it there first.";
    return;
  }
  if (!r) return;
  status.textContent = describe(r);
  if (r.state === "waiting" && r.step) {
    status.className = "waiting";
    if (r.step.auto_ms) {
      const until = Date.now() + r.step.auto_ms;
      const tick = () => {
        const left = Math.max(0, (until - Date.now()) / 1000);
        status.textContent = `Step ${r.step.index + 1} of ${r.step.count} waits: press space or → (goes on by itself in ${left.toFixed(1)} s, before ${r.step.auto_what} runs out: the servers' clocks do not stop)`;
      };
      tick();
      ui.countdown = setInterval(tick, 100);
    }
  }
  const steps = document.querySelectorAll("#steps li");
  steps.forEach((li, i) => {
    const at = r.step ? r.step.index : (r.state === "done" ? steps.length : -1);
    li.classList.toggle("done", i < at);
    li.classList.toggle("current", i === at && running);
  });
  $("#state").textContent = r.step && r.step.state ? r.step.state.join("\n") : "";
  if (r.timeline) $("#timeline").innerHTML = r.timeline; // drawn and escaped by the server (reports/svg.go)
  // liveDrawn names the last run whose timeline was drawn with a hold
  // while it ran (the browser test reads it).
  if (r.timeline && !r.result && r.timeline.includes("tl-belief")) ui.liveDrawn = r.id;
  const cf = $("#cf-block");
  if (r.cf_timeline) {
    cf.hidden = false;
    $("#cf-timeline").innerHTML = r.cf_timeline;
  } else cf.hidden = true;
  const n = $("#narration");
  n.textContent = (r.narration || []).join("\n");
  n.scrollTop = n.scrollHeight;
  renderResult(r);
}

function describe(r) {
  const mode = { run: "Run", step: "Step mode", counterfactual: "Run with its counterfactual" }[r.mode];
  switch (r.state) {
    case "running":
      return `${mode}: running… ${r.events} events${r.cf_events ? `, counterfactual ${r.cf_events}` : ""}` + (r.step ? ` (step ${r.step.index + 1} of ${r.step.count})` : "");
    case "waiting":
      return `Step ${r.step.index + 1} of ${r.step.count} waits: press space or →`;
    case "done":
      return `${mode}: done, ${r.events} events.`;
    case "stopped":
      return "Stopped: " + r.error + ".";
    case "failed":
      return "The harness failed: no verdict.";
  }
  return r.state;
}

function renderResult(r) {
  const box = $("#result");
  box.replaceChildren();
  if (r.state === "failed") box.append(el("p", { class: "error", text: r.error }));
  const res = r.result;
  if (!res) return;
  const v = el("section", { class: "verdict " + res.verdict, id: "verdict" }, el("span", { class: "badge " + res.verdict, text: res.verdict }));
  const words = el("div", {}, el("p", { text: res.summary }),
    el("p", { class: "muted", text: res.verdict === res.expected ? "As expected: this story should end " + res.expected + "." : "NOT as expected: this story should end " + res.expected + "." }));
  if (res.counterfactual) words.append(el("p", { id: "cf-sentence", text: res.counterfactual.sentence + ". " + res.counterfactual.summary }));
  const links = el("p", {}, "Files: ");
  res.links.forEach((l, i) => links.append(i ? " · " : "", el("a", { href: l.href, target: "_blank", text: l.text })));
  words.append(links);
  v.append(words);
  box.append(v);
  for (const f of res.evidence || []) {
    box.append(el("div", { class: "evidence" + (f.bad ? "" : " good") }, el("div", { class: "kind", text: f.kind }), el("div", { text: f.sentence }),
      f.events && f.events.length ? el("pre", { text: f.events.join("\n") }) : null));
  }
}

// busyWith says what is in progress: a run of a story, the sweep, or
// nothing ("").
function busyWith() {
  const m = ui.live;
  if (!m) return "";
  if (m.run && !["done", "failed", "stopped"].includes(m.run.state)) return m.run.story;
  if (m.sweep && m.sweep.state === "running") return "sweep";
  if (m.hunt && m.hunt.state === "running") return "hunt";
  if (m.cost && m.cost.state === "running") return "cost";
  return "";
}

// busyWords names what busyWith returned, for a sentence.
function busyWords(busy) {
  return { sweep: "The sweep", hunt: "The hunt", cost: "The cost run" }[busy] || "A story (" + busy + ")";
}

// ---- the sweep page ----

function renderSweep(main) {
  const p = ui.sweeps[0];
  if (!p) return;
  main.append(el("h1", { text: "Sweep: " + p.title }), el("p", { text: p.about }),
    el("p", { class: "muted", text: `${p.scenario}, ${p.param}, ${p.points} points × ${p.trials} trials, locks ${p.locks.join(", ")}.` }));
  main.append(el("div", { class: "buttons" },
    el("button", { id: "sweep-start", class: "primary", onclick: startSweep, title: "key r" }, "Start the sweep", el("kbd", { text: "r" })),
    el("button", { id: "stop", onclick: stop, title: "key Esc" }, "Stop", el("kbd", { text: "Esc" }))));
  main.append(el("div", { id: "status" }), el("div", { class: "plots", id: "plots" }), el("div", { id: "rows" }));
  updateSweep();
}

function updateSweep() {
  const status = $("#status");
  if (!status || ui.view !== "sweep") return;
  const busy = busyWith();
  $("#sweep-start").disabled = busy !== "";
  $("#stop").disabled = busy !== "sweep";
  const w = ui.live && ui.live.sweep;
  if (busy && busy !== "sweep") {
    status.textContent = busyWords(busy) + " is running. Stop it there first.";
    return;
  }
  if (!w) {
    status.textContent = "Each point appears as its trials finish: one line per lock, with its 95% interval.";
    return;
  }
  const n = (w.rows || []).length;
  status.textContent = { running: `Sweeping… ${n} of ${w.total} points played.`, done: `Done: ${n} points.`, stopped: "Stopped: " + w.error + ".", failed: "The sweep failed: " + w.error }[w.state] || w.state;
  $("#plots").innerHTML = (w.plots || []).join(""); // drawn by the server (reports.RatePlotSVG): no text from the page
  const t = el("table", { class: "rows" }, el("tr", {}, ...["lock", "point", "trials", "unknown", "damaged", "violated"].map((h) => el("th", { text: h }))));
  for (const r of w.rows || []) t.append(el("tr", {}, ...[r.lock, r.value, r.trials, r.unknown, r.damaged, r.violated].map((v) => el("td", { text: String(v) }))));
  $("#rows").replaceChildren(t);
}

async function startSweep() {
  try {
    await api("/api/sweep", { preset: ui.sweeps[0].id });
  } catch (e) {
    flash(e.message);
  }
}

// ---- the hunt page ----

function renderHunt(main) {
  const p = ui.hunts[0];
  if (!p) return;
  main.append(el("h1", { text: "Hunt: " + p.title }), el("p", { text: p.about }),
    el("p", { class: "muted" }, "The same as ", el("code", { text: p.command }), ` (the shrink bounded to ${p.shrink_runs} runs). The hand-written story it should find again: `,
      el("a", { href: "#/story/" + p.story, text: p.story }), "."));
  main.append(el("div", { class: "buttons" },
    el("button", { id: "hunt-start", class: "primary", onclick: startHunt, title: "key r" }, "Start the hunt", el("kbd", { text: "r" })),
    el("button", { id: "stop", onclick: stop, title: "key Esc" }, "Stop", el("kbd", { text: "Esc" }))));
  main.append(el("div", { id: "status" }), el("div", { class: "dots-row" }, el("span", { class: "muted", text: "story runs (red: unsafe, green: safe, amber: unknown):" }), el("div", { id: "hunt-dots", class: "dots" })));
  const said = el("div", { class: "card" }, el("h3", { text: "What sim hunt says" }), el("pre", { id: "hunt-lines", class: "hunt-lines" }));
  const playing = el("div", { class: "card", id: "hunt-now" }, el("h3", { id: "hunt-playing", text: "The story run being played" }), el("div", { class: "timeline-wrap", id: "hunt-timeline" },
    el("p", { class: "muted", text: "Start the hunt: each story it plays is drawn here as its events are recorded." })));
  main.append(el("div", { class: "grid hunt-live", id: "hunt-live" }, said, playing), el("div", { id: "hunt-result" }));
  updateHunt();
}

function updateHunt() {
  const status = $("#status");
  if (!status || ui.view !== "hunt") return;
  const busy = busyWith();
  $("#hunt-start").disabled = busy !== "";
  $("#stop").disabled = busy !== "hunt";
  status.className = "";
  const h = ui.live && ui.live.hunt;
  if (busy && busy !== "hunt") {
    status.textContent = busyWords(busy) + " is running. Stop it there first.";
    return;
  }
  if (!h) {
    status.textContent = "Each candidate is played on real servers; the first that breaks the lock is shrunk, then shown beside the story written by hand.";
    return;
  }
  const runs = h.phase_runs || {};
  const phase = { candidates: "playing the candidates", shrink: "shrinking the first finding", reproduction: "playing the shrunk story three more times", replay: "playing the found story and the hand-written one" }[h.phase] || "starting the servers";
  const counts = `${h.candidates} candidate(s) in ${runs.candidates || 0} run(s)` + (runs.shrink ? `, shrink ${runs.shrink} run(s)` : "") + (runs.reproduction ? `, reproduction ${runs.reproduction}` : "");
  status.textContent = { running: `Hunting: ${phase}. ${counts}.`, done: `Done: ${counts}.`, stopped: "Stopped: " + h.error + ".", failed: "The hunt failed: " + h.error }[h.state] || h.state;
  $("#hunt-dots").replaceChildren(...(h.verdicts || []).map((v) => el("span", { class: "dot " + v, title: v })));
  const lines = $("#hunt-lines");
  lines.textContent = (h.lines || []).join("\n");
  lines.scrollTop = lines.scrollHeight;
  if (h.timeline) {
    $("#hunt-playing").textContent = "Now playing: " + h.playing;
    $("#hunt-timeline").innerHTML = h.timeline; // drawn and escaped by the server (reports/svg.go)
  }
  renderHuntResult(h.result);
}

function renderHuntResult(res) {
  const box = $("#hunt-result");
  if (!res) {
    box.replaceChildren();
    box.dataset.shown = "";
    $("#hunt-now").hidden = false;
    $("#hunt-live").classList.add("hunt-live");
    return;
  }
  if (box.dataset.shown === "1") return; // drawn once: the result does not change
  box.dataset.shown = "1";
  // Once the two stories are shown below, the run being played gives
  // way: what sim hunt said stays, the width of the page.
  const sides = !!(res.sides && res.sides.length);
  $("#hunt-now").hidden = sides;
  $("#hunt-live").classList.toggle("hunt-live", !sides);
  const verdict = res.found ? "unsafe" : "safe";
  const words = el("div", {}, el("p", { text: (res.found ? "FOUND: " : "") + res.summary }), el("p", { class: "muted", text: res.counts }));
  for (const n of res.notes || []) words.append(el("p", { text: n }));
  const links = el("p", {}, "Files: ");
  res.links.forEach((l, i) => links.append(i ? " · " : "", el("a", { href: l.href, target: "_blank", text: l.text })));
  words.append(links);
  box.append(el("section", { class: "verdict " + verdict, id: "hunt-verdict" }, el("span", { class: "badge " + verdict, text: res.found ? "found" : "nothing" }), words));
  if (!res.sides) return;
  const grid = el("div", { class: "sides", id: "sides" });
  for (const side of res.sides) {
    const s = side.story;
    const card = el("div", { class: "card side" }, el("h2", { text: side.heading }),
      el("p", {}, el("code", { text: s.name }), " ", side.verdict ? el("span", { class: "badge " + side.verdict, text: side.verdict }) : null),
      el("p", { text: s.title }), el("p", { class: "source", text: s.source }));
    const ol = el("ol", { class: "steps" });
    for (const st of s.steps) ol.append(el("li", {}, st.say ? st.say + " " : "", el("span", { class: "do", text: st.do })));
    card.append(ol);
    if (side.error) card.append(el("p", { class: "error", text: side.error }));
    const l = el("p", {}, "Files: ");
    (side.links || []).forEach((x, i) => l.append(i ? " · " : "", el("a", { href: x.href, target: "_blank", text: x.text })));
    card.append(l);
    grid.append(card);
  }
  box.append(grid);
  for (const side of res.sides) {
    if (!side.timeline) continue;
    box.append(el("h2", { text: side.heading + ": " + side.story.name }));
    const t = el("div", { class: "timeline-wrap side-timeline" });
    t.innerHTML = side.timeline; // drawn and escaped by the server (reports/svg.go)
    box.append(t);
  }
}

async function startHunt() {
  try {
    await api("/api/hunt", { preset: ui.hunts[0].id });
  } catch (e) {
    flash(e.message);
  }
}

// ---- the cost view ----

function renderCost(main) {
  const p = ui.costs[0];
  if (!p) return;
  main.append(el("h1", { text: "Cost: " + p.title }), el("p", { text: p.about }),
    el("p", { class: "muted" }, "The same as ", el("code", { text: p.command }), ". docs/cost.md gives two runs of every lock with 2 s points, and what they say against the debate."));
  main.append(el("div", { class: "buttons" },
    el("button", { id: "cost-start", class: "primary", onclick: startCost, title: "key r" }, "Measure", el("kbd", { text: "r" })),
    el("button", { id: "stop", onclick: stop, title: "key Esc" }, "Stop", el("kbd", { text: "Esc" }))));
  main.append(el("div", { id: "status" }), el("progress", { id: "cost-progress", max: "1", value: "0" }));
  const read = el("div", { class: "card", id: "cost-read" }, el("h3", { text: "How to read the chart" }),
    el("p", { text: "x is the price, on a log scale: the p99 of one critical section (acquire, read and write the protected counter, release), one client. " +
      "y lists the faults that cause the catalogue's stories. A mark is a story's verdict at the lock option and defence it is told with: green safe, red unsafe, orange leaked; " +
      "its shape is the defence (circle none, square fenced, triangle token-cas, pyramid a lease check, cross a watchdog). The numbers above the top row name the options, from the cheapest." }),
    el("p", { text: "Read a row from left to right: how much more a lock costs to survive that fault. The table under the chart gives each lock's acquire and release as a multiple of its floor, " +
      "one round trip measured in the same run: the multiples travel to other machines better than the microseconds." }),
    el("p", { text: "Against the debate: Kleppmann calls Redlock too expensive for a lock that only saves work, and not safe enough for one that correctness depends on; " +
      "antirez answers the crash case with fsync and counts locks per second. Compare redlock/none, everysec and always (fsync at every write) with one Redis node and with PostgreSQL: " +
      "what fsync costs, and which marks it turns green (the power-loss stories). Their words, and what two full runs showed, are in docs/cost.md." }));
  main.append(el("div", { class: "cost-view" }, el("div", { class: "card", id: "cost-chart-card" }, el("h3", { text: "The chart (cost.png)" }),
    el("div", { id: "cost-chart" }, el("p", { class: "muted", text: "Press Measure: the chart of this machine appears when the run ends." }))), read));
  main.append(el("pre", { id: "cost-table", class: "cost-table" }), el("p", { id: "cost-links" }));
  updateCost();
}

function updateCost() {
  const status = $("#status");
  if (!status || ui.view !== "cost") return;
  const busy = busyWith();
  $("#cost-start").disabled = busy !== "";
  $("#stop").disabled = busy !== "cost";
  status.className = "";
  const c = ui.live && ui.live.cost;
  if (busy && busy !== "cost") {
    status.textContent = busyWords(busy) + " is running. Stop it there first.";
    return;
  }
  if (!c) {
    status.textContent = "Each lock option is measured on servers of its own, one after another.";
    return;
  }
  const bar = $("#cost-progress");
  bar.max = String(c.total || 1);
  bar.value = String(c.done);
  status.textContent = { running: `Measuring… ${c.done} of ${c.total} points: ${c.what || "starting the servers"}.`,
    done: `Done: ${c.total} points in ${c.result ? Math.round(c.result.took_s) : "?"} s.` + (c.result && c.result.failed ? " Not measured: " + c.result.failed : ""),
    stopped: "Stopped: " + c.error + ".", failed: "The cost run failed: " + c.error }[c.state] || c.state;
  const res = c.result;
  const chart = $("#cost-chart");
  if (!res) {
    if (c.state === "running") chart.replaceChildren(el("p", { class: "muted", text: "Measuring: the chart appears when the run ends." }));
    $("#cost-table").textContent = "";
    $("#cost-links").replaceChildren();
    return;
  }
  if (chart.dataset.src !== res.chart) {
    chart.dataset.src = res.chart;
    chart.replaceChildren(el("img", { id: "cost-png", src: res.chart, alt: "cost.png of the run: " + res.command }));
  }
  $("#cost-table").textContent = res.command + "\n\n" + res.table;
  const links = el("p", {}, "Files: ");
  res.links.forEach((l, i) => links.append(i ? " · " : "", el("a", { href: l.href, target: "_blank", text: l.text })));
  $("#cost-links").replaceChildren(links);
}

async function startCost() {
  try {
    await api("/api/cost", { preset: ui.costs[0].id });
  } catch (e) {
    flash(e.message);
  }
}

// ---- actions ----

async function start(mode) {
  if (!ui.stories.has(ui.view)) return;
  try {
    await api("/api/run", { story: ui.view, mode });
  } catch (e) {
    flash(e.message);
  }
}

async function next() {
  try { await api("/api/next", {}); } catch (e) { /* no step waits: nothing to do */ }
}

async function stop() {
  try { await api("/api/stop", {}); } catch (e) { flash(e.message); }
}

function flash(msg) {
  const s = $("#status");
  if (s) { s.className = "error"; s.textContent = msg; } else alert(msg);
}

// ---- the live stream ----

function connect() {
  const es = new EventSource("/api/live");
  es.onmessage = (ev) => {
    const first = ui.live === null;
    ui.live = JSON.parse(ev.data);
    banner();
    if (ui.view === "debate" && first) render();
    else if (ui.view === "sweep") updateSweep();
    else if (ui.view === "hunt") updateHunt();
    else if (ui.view === "cost") updateCost();
    else if (ui.view !== "debate") updateStory();
  };
}

function banner() {
  const b = $("#live-banner");
  const busy = busyWith();
  b.hidden = busy === "";
  if (busy) b.replaceChildren("● running ", el("a", { href: ["sweep", "hunt", "cost"].includes(busy) ? "#/" + busy : "#/story/" + busy, text: busy }));
}

// ---- views ----

function render() {
  const main = $("#page");
  main.replaceChildren();
  const h = location.hash;
  if (h === "#/sweep") {
    ui.view = "sweep";
    renderSweep(main);
  } else if (h === "#/hunt") {
    ui.view = "hunt";
    renderHunt(main);
  } else if (h === "#/cost") {
    ui.view = "cost";
    renderCost(main);
  } else if (h.startsWith("#/story/")) {
    ui.view = decodeURIComponent(h.slice(8));
    renderStory(main, ui.view);
  } else {
    ui.view = "debate";
    if (ui.debate) renderDebate(main);
  }
  window.scrollTo(0, 0);
}

document.addEventListener("keydown", (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.target.tagName === "INPUT") return;
  const onStory = ui.stories.has(ui.view);
  switch (e.key) {
    case " ": case "ArrowRight":
      if (onStory) { e.preventDefault(); next(); }
      break;
    case "r": if (onStory) start("run"); else if (ui.view === "sweep") startSweep(); else if (ui.view === "hunt") startHunt(); else if (ui.view === "cost") startCost(); break;
    case "s": if (onStory) start("step"); break;
    case "c": if (onStory) start("counterfactual"); break;
    case "Escape": stop(); break;
    case "d": location.hash = "#/"; break;
    case "h": $("#contrast").click(); break;
    case "p": $("#predict").click(); break;
  }
});

async function main() {
  setting("predict");
  setting("contrast", "contrast");
  const [stories, debate, sweeps, hunts, costs] = await Promise.all([api("/api/stories"), api("/api/debate"), api("/api/sweeps"), api("/api/hunts"), api("/api/costs")]);
  ui.sweeps = sweeps;
  ui.hunts = hunts;
  ui.costs = costs;
  for (const s of stories) ui.stories.set(s.name, s);
  ui.debate = debate;
  window.addEventListener("hashchange", render);
  render();
  connect();
}

main().catch((e) => { $("#page").textContent = "The page could not load: " + e.message; });
