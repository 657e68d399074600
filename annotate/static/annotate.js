// The annotator's page: walks the screens (QA check, step 1, step 2, note), highlights the current span or
// QA in both texts, and saves every answer the moment it is given. It reads text with textContent and
// writes only classes, attributes and textContent: the server has escaped every string (annotate/page.py).
//
// Saving: every answer (and the note) joins a queue, numbered in the order given (`seq`), kept in
// localStorage until the server acknowledges it (so a reload or a closed tab keeps it too), and sent one at
// a time, in order, retried without end while the server cannot be reached. The header counts what is not
// saved yet; submit waits for the queue to empty. An answer the server refuses (4xx) leaves the queue and
// its row says "refused" with the server's reason.
"use strict";
(function () {
  const S = JSON.parse(document.getElementById("state").textContent);
  const labels = S.labels;  // {check: {qa: 0|1}, span: {span: 0|1}, qa: {qa: 0|1}}, the store's polarities
  const steps = (S.qa_check ? ["check"] : []).concat(["step1", "step2", "finish"]);
  let step = null, cur = 0, sending = false, offline = false;
  const refused = {};  // "kind target" -> the server's reason, drawn on that row
  const $ = (sel, root) => Array.from((root || document).querySelectorAll(sel));
  const saved = document.getElementById("saved"), msg = document.getElementById("msg");
  const note = document.getElementById("note");
  note.value = S.note || "";

  // ---------------------------------------------------------------- what each row means
  const dropped = (qa) => labels.check[qa] === 1;
  const uncovered = (row) => (row.dataset.spans || "").split(" ").some((s) => s && labels.span[s] === 0);
  // a row the annotator is not asked about: a dropped QA, a span whose QAs are all dropped, a QA under an uncovered span
  function skipped(row) {
    const k = row.dataset.kind, t = row.dataset.target;
    if (k === "span") { const qas = (row.dataset.qas || "").split(" ").filter(Boolean); return qas.length > 0 && qas.every(dropped); }
    if (k === "qa") return dropped(t) || uncovered(row);
    return false;
  }
  const value = (row) => labels[row.dataset.kind][row.dataset.target];
  // y / n -> the stored value: keep 0 / drop 1; covered 1 / not 0; supported 0 / not supported 1
  const stored = (kind, yes) => (kind === "span" ? (yes ? 1 : 0) : (yes ? 0 : 1));
  const isYes = (kind, v) => (kind === "span" ? v === 1 : v === 0);
  const rows = () => $("#" + step + " li.row").filter((r) => !skipped(r));

  // ---------------------------------------------------------------- drawing
  function draw(scroll) {
    $("header .steps button").forEach((s) => s.classList.toggle("on", s.dataset.step === step));
    back.disabled = steps.indexOf(step) <= 0;
    $(".screen").forEach((s) => s.classList.toggle("on", s.id === step));
    $("li.row").forEach((r) => {
      const v = value(r), auto = r.dataset.kind === "qa" && skipped(r);
      r.classList.toggle("auto", auto);
      r.classList.toggle("gone", r.dataset.kind === "span" && skipped(r));
      r.classList.toggle("yes", !auto && v !== undefined && isYes(r.dataset.kind, v));
      r.classList.toggle("no", auto || (v !== undefined && !isYes(r.dataset.kind, v)));
      r.querySelector(".v").textContent = auto ? (dropped(r.dataset.target) ? "dropped" : "span not covered: not supported")
        : v === undefined ? "" : r.querySelector(isYes(r.dataset.kind, v) ? "button.yes" : "button.no").textContent.replace(/ \(.\)$/, "");
      const sugg = r.querySelector(".sugg");  // the model's P(supported), only once the annotator has answered
      if (sugg && r.dataset.p !== undefined) {
        sugg.hidden = !(S.suggestion === "after" && v !== undefined);
        sugg.textContent = "model: P(supported) " + r.dataset.p;
      }
      const why = refused[r.dataset.kind + " " + r.dataset.target];
      r.classList.toggle("refused", why !== undefined);
      if (why !== undefined) r.querySelector(".v").textContent = "refused: " + why;
      r.classList.remove("cur");
      r.removeAttribute("aria-current");
    });
    $(".t").forEach((t) => t.classList.remove("hl", "pred", "hit", "on"));
    hits = [];
    const rs = rows(), row = rs[Math.min(cur, rs.length - 1)];
    if (step !== "finish" && row) {
      row.classList.add("cur");
      row.setAttribute("aria-current", "true");
      // the questions scroll in their own pane, the texts in theirs: nothing covers the current row
      if (scroll) row.scrollIntoView({block: "center"});
      const a = +row.dataset.start, b = +row.dataset.end, preds = row.dataset.pred.split(" ").map(Number);
      const words = new Set();
      $("#gen .t").forEach((t) => {
        const i = +t.dataset.i;
        if (i >= a && i < b) { t.classList.add("hl"); words.add(t.dataset.w); }
        if (preds.includes(i)) t.classList.add("pred");
      });
      const first = $("#gen .t.hl")[0];
      if (scroll && first) first.scrollIntoView({block: "nearest"});
      // the same content words in the reference, as a reading aid (no claim that they match); stop words never
      hits = $("#ref .t:not(.sw)").filter((t) => words.has(t.dataset.w));
      hits.forEach((t) => t.classList.add("hit"));
      if (scroll) hit = 0;
    }
    showHit(scroll);
    drawSaved();
  }

  // ---------------------------------------------------------------- the reading aid's matches, one by one
  let hits = [], hit = 0;
  const hitBox = document.querySelector("#ref .hits");
  function showHit(scroll) {
    hitBox.hidden = hits.length === 0;
    if (!hits.length) return;
    hit = (hit + hits.length) % hits.length;
    hits[hit].classList.add("on");
    document.getElementById("hit-n").textContent = (hit + 1) + " of " + hits.length;
    if (scroll) hits[hit].scrollIntoView({block: "nearest"});
  }
  function moveHit(d) { if (!hits.length) return; hits[hit].classList.remove("on"); hit += d; showHit(true); }
  document.getElementById("hit-prev").addEventListener("click", () => moveHit(-1));
  document.getElementById("hit-next").addEventListener("click", () => moveHit(1));

  function drawSaved() {
    const n = queue.length, bad = Object.keys(refused).length;
    const ans = (k) => k + (k === 1 ? " answer" : " answers");
    saved.textContent = n ? (offline ? ans(n) + " not saved yet: retrying (check the connection)" : "saving " + ans(n) + "…")
      : bad ? ans(bad) + " refused: see the rows marked refused" : "all saved";
    saved.dataset.pending = n;
    saved.classList.toggle("err", (n > 0 && offline) || bad > 0);
  }

  // ---------------------------------------------------------------- saving
  const KEY = "annotate " + S.token + " " + S.item_id;
  const queue = (() => { try { return JSON.parse(localStorage.getItem(KEY)) || []; } catch (e) { return []; } })();
  let lastSeq = 0, drained = [];
  function persist() {
    try { if (queue.length) localStorage.setItem(KEY, JSON.stringify(queue)); else localStorage.removeItem(KEY); } catch (e) {}
  }
  // numbered in the order given, across reloads: the server keeps, for each row, the answer given last
  function nextSeq() { lastSeq = Math.max(lastSeq + 1, Date.now() * 1000); return lastSeq; }
  function applyLabel(kind, target, v) {
    labels[kind][target] = v;
    if (kind === "span" && v === 0)  // the store clears them too: those QAs are now unsupported without asking
      ($("#step1 li.row").find((r) => r.dataset.target === String(target)).dataset.qas || "").split(" ")
        .forEach((q) => { delete labels.qa[q]; });
  }
  // what a reload found still unsent: shown as given, and sent again
  queue.forEach((e) => {
    lastSeq = Math.max(lastSeq, e.body.seq);
    if (e.path === "label") applyLabel(e.body.kind, String(e.body.target), e.body.value);
    else if (e.path === "note") note.value = e.body.note;
  });
  let noteSent = note.value;

  function enqueue(path, body) {
    body.seq = nextSeq();
    if (path === "note")  // only the latest note matters; one already on its way stays
      for (let i = queue.length - 1; i >= (sending ? 1 : 0); i--) if (queue[i].path === "note") queue.splice(i, 1);
    queue.push({path: path, body: body});
    persist(); drawSaved(); pump();
  }

  async function pump() {
    if (sending) return;
    sending = true;
    try {
      for (let tries = 0; queue.length; ) {
        const e = queue[0];
        let r = null, out = {};
        try {
          r = await fetch("/api/" + encodeURIComponent(S.token) + "/" + e.path, {
            method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(e.body)});
          out = await r.json().catch(() => ({}));
        } catch (err) { r = null; }  // the network or the server is down
        if (r && r.ok) {
          queue.shift(); persist(); offline = false; tries = 0;
        } else if (r && r.status >= 400 && r.status < 500) {  // refused: retrying would not change the answer
          queue.shift(); persist(); offline = false; tries = 0;
          const why = out.error || ("refused (" + r.status + ")");
          if (e.path === "label") refused[e.body.kind + " " + e.body.target] = why;
          msg.textContent = why;
          draw(false);
        } else {
          offline = true; drawSaved();
          await new Promise((ok) => setTimeout(ok, Math.min(300 * 2 ** tries++, 2000)));
        }
        drawSaved();
      }
    } finally {
      sending = false; drawSaved();
      drained.splice(0).forEach((ok) => ok());
    }
  }
  const allSent = () => (queue.length ? new Promise((ok) => { drained.push(ok); pump(); }) : Promise.resolve());

  function answer(yes) {
    const rs = rows(), row = rs[Math.min(cur, rs.length - 1)];
    if (!row) return;
    const kind = row.dataset.kind, target = row.dataset.target, v = stored(kind, yes);
    applyLabel(kind, target, v);
    delete refused[kind + " " + target];
    enqueue("label", {item_id: S.item_id, kind: kind, target: target, value: v});
    next();
  }

  // to the next unanswered row of this step, else the next step
  function next() {
    const rs = rows();
    const after = rs.findIndex((r, i) => i > cur && value(r) === undefined);
    const any = rs.findIndex((r) => value(r) === undefined);
    if (after >= 0) cur = after;
    else if (any >= 0) cur = any;
    else return go(openStep(steps.indexOf(step) + 1));
    draw(true);
  }

  // the first screen from index i on with a question left (a step 2 all greyed by step 1 is passed over)
  function openStep(i) {
    const here = step;
    const found = steps.slice(i).find((s) => { step = s; return s !== "finish" && rows().some((r) => value(r) === undefined); });
    step = here;
    return found || "finish";
  }

  function go(s) {
    if (!s) return;
    step = s;
    const rs = rows(), i = rs.findIndex((r) => value(r) === undefined);
    cur = i >= 0 ? i : 0;
    draw(true);
    if (step === "finish" && document.activeElement !== note) document.getElementById("submit").focus();
  }

  let noteTimer = null;
  function saveNote() {
    clearTimeout(noteTimer);
    if (note.value !== noteSent) { noteSent = note.value; enqueue("note", {item_id: S.item_id, note: note.value}); }
  }
  note.addEventListener("input", () => { clearTimeout(noteTimer); noteTimer = setTimeout(saveNote, 500); });
  note.addEventListener("blur", saveNote);

  // submit once every answer is saved; while the server is away, keep trying
  let submitting = false;
  async function submit() {
    if (submitting) return;
    submitting = true;
    saveNote();
    if (queue.length) msg.textContent = "submitting once every answer is saved…";
    await allSent();
    if (Object.keys(refused).length) { msg.textContent = "some answers were refused: see the rows marked refused"; submitting = false; return; }
    for (let tries = 0; ; ) {
      let r = null, out = {};
      try {
        r = await fetch("/api/" + encodeURIComponent(S.token) + "/done", {method: "POST", headers: {"Content-Type": "application/json"},
          body: JSON.stringify({item_id: S.item_id, platform_assignment: S.mturk ? S.mturk.assignment_id : null})});
        out = await r.json().catch(() => ({}));
      } catch (err) { r = null; }
      if (r && r.ok) {
        try { localStorage.removeItem(KEY); } catch (e) {}
        if (out.mturk_fields) return mturkSubmit(out.mturk_fields);
        return location.assign(out.next);
      }
      if (r && r.status >= 400 && r.status < 500) { msg.textContent = out.error || ("refused (" + r.status + ")"); submitting = false; return; }
      offline = true; drawSaved(); msg.textContent = "submitting: waiting for the server…";
      await new Promise((ok) => setTimeout(ok, Math.min(300 * 2 ** tries++, 2000)));
    }
  }

  // MTurk's external question ends with a form posted to its externalSubmit (built with the DOM, values as text)
  function mturkSubmit(fields) {
    const form = document.createElement("form");
    form.method = "POST";
    form.action = S.mturk.submit_to + "/mturk/externalSubmit";
    Object.keys(fields).forEach((k) => {
      const input = document.createElement("input");
      input.type = "hidden"; input.name = k; input.value = fields[k];
      form.appendChild(input);
    });
    document.body.appendChild(form);
    form.submit();
  }

  // ---------------------------------------------------------------- input
  document.getElementById("submit").addEventListener("click", submit);
  $("li.row").forEach((r) => {
    r.querySelector("button.yes").addEventListener("click", () => { if (select(r)) answer(true); });
    r.querySelector("button.no").addEventListener("click", () => { if (select(r)) answer(false); });
  });
  // a click answers the row it is on; a greyed row (answered by the protocol) takes no click
  function select(row) { const i = rows().indexOf(row); if (i >= 0) cur = i; return i >= 0; }
  $("header .steps button").forEach((s) => s.addEventListener("click", () => go(s.dataset.step)));
  const back = document.getElementById("back");
  back.addEventListener("click", () => go(steps[Math.max(steps.indexOf(step) - 1, 0)]));

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target === note) { if (e.key === "Escape") { note.blur(); e.preventDefault(); } return; }
    const k = e.key, rs = rows();
    if (k === "y" && step !== "finish") answer(true);
    else if (k === "n" && step !== "finish") answer(false);
    else if (k === "j" || k === "ArrowDown") { cur = Math.min(cur + 1, rs.length - 1); draw(true); }
    else if (k === "k" || k === "ArrowUp") { cur = Math.max(cur - 1, 0); draw(true); }
    else if (k === "b") go(steps[Math.max(steps.indexOf(step) - 1, 0)]);
    else if (k === "f") go(steps[steps.indexOf(step) + 1]);
    else if (k === "t") { go("finish"); note.focus(); }
    else if (k === "Enter" && step === "finish") submit();
    else return;
    e.preventDefault();
  });

  // resume: the first screen with an unanswered row, else the last one; then send what a reload kept
  go(openStep(0));
  pump();
})();
