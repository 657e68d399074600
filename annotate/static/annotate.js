// The annotator's page: walks the screens (QA check, step 1, step 2, note), highlights the current span or
// QA in both texts, and saves every answer the moment it is given. It reads text with textContent and
// writes only classes, attributes and textContent: the server has escaped every string (annotate/page.py).
"use strict";
(function () {
  const S = JSON.parse(document.getElementById("state").textContent);
  const labels = S.labels;  // {check: {qa: 0|1}, span: {span: 0|1}, qa: {qa: 0|1}}, the store's polarities
  const steps = (S.qa_check ? ["check"] : []).concat(["step1", "step2", "finish"]);
  let step = null, cur = 0, pending = 0, failed = false;
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
  function draw() {
    $("header .steps span").forEach((s) => s.classList.toggle("on", s.dataset.step === step));
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
      r.classList.remove("cur");
    });
    $(".t").forEach((t) => t.classList.remove("hl", "pred", "hit"));
    const rs = rows(), row = rs[Math.min(cur, rs.length - 1)];
    if (step !== "finish" && row) {
      row.classList.add("cur");
      row.scrollIntoView({block: "center"});  // below the sticky texts, not under them
      const a = +row.dataset.start, b = +row.dataset.end, preds = row.dataset.pred.split(" ").map(Number);
      const words = new Set();
      $("#gen .t").forEach((t) => {
        const i = +t.dataset.i;
        if (i >= a && i < b) { t.classList.add("hl"); words.add(t.textContent.toLowerCase()); }
        if (preds.includes(i)) t.classList.add("pred");
      });
      // the same words in the reference, as a reading aid (no claim that they match)
      $("#ref .t").forEach((t) => { const w = t.textContent.toLowerCase(); if (w.length > 2 && words.has(w)) t.classList.add("hit"); });
      const first = $("#ref .t.hit")[0];
      if (first) first.scrollIntoView({block: "nearest"});
    }
    saved.textContent = failed ? "NOT SAVED: check the connection" : pending ? "saving…" : "all saved";
    saved.classList.toggle("err", failed);
  }

  // ---------------------------------------------------------------- saving
  async function post(path, body, tries) {
    pending++; draw();
    try {
      for (let i = 0; ; i++) {
        try {
          const r = await fetch("/api/" + encodeURIComponent(S.token) + "/" + path, {
            method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
          const out = await r.json().catch(() => ({}));
          if (!r.ok) { msg.textContent = out.error || ("refused: " + r.status); return null; }
          failed = false; msg.textContent = ""; return out;
        } catch (e) {  // the network or the server is down: try again a few times, then say so
          if (i + 1 >= (tries || 5)) { failed = true; return null; }
          await new Promise((ok) => setTimeout(ok, 400 * (i + 1)));
        }
      }
    } finally { pending--; draw(); }
  }

  function answer(yes) {
    const rs = rows(), row = rs[Math.min(cur, rs.length - 1)];
    if (!row) return;
    const kind = row.dataset.kind, target = row.dataset.target, v = stored(kind, yes);
    labels[kind][target] = v;
    if (kind === "span" && v === 0)  // the store clears them too: those QAs are now unsupported without asking
      (row.dataset.qas || "").split(" ").forEach((q) => { delete labels.qa[q]; });
    post("label", {item_id: S.item_id, kind: kind, target: target, value: v});
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
    draw();
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
    draw();
    if (step === "finish" && document.activeElement !== note) document.getElementById("submit").focus();
  }

  let noteTimer = null;
  function saveNote() { clearTimeout(noteTimer); return post("note", {item_id: S.item_id, note: note.value}); }
  note.addEventListener("input", () => { clearTimeout(noteTimer); noteTimer = setTimeout(saveNote, 500); });
  note.addEventListener("blur", saveNote);

  let submitting = false;
  async function submit() {
    if (submitting) return;
    submitting = true;
    await saveNote();
    const out = await post("done", {item_id: S.item_id, platform_assignment: S.mturk ? S.mturk.assignment_id : null});
    if (out && out.mturk_fields) return mturkSubmit(out.mturk_fields);
    if (out) location.assign(out.next);
    else submitting = false;
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
  $("header .steps span").forEach((s) => s.addEventListener("click", () => go(s.dataset.step)));

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target === note) { if (e.key === "Escape") { note.blur(); e.preventDefault(); } return; }
    const k = e.key, rs = rows();
    if (k === "y" && step !== "finish") answer(true);
    else if (k === "n" && step !== "finish") answer(false);
    else if (k === "j" || k === "ArrowDown") { cur = Math.min(cur + 1, rs.length - 1); draw(); }
    else if (k === "k" || k === "ArrowUp") { cur = Math.max(cur - 1, 0); draw(); }
    else if (k === "b") go(steps[Math.max(steps.indexOf(step) - 1, 0)]);
    else if (k === "f") go(steps[steps.indexOf(step) + 1]);
    else if (k === "t") { go("finish"); note.focus(); }
    else if (k === "Enter" && step === "finish") submit();
    else return;
    e.preventDefault();
  });

  // resume: the first screen with an unanswered row, else the last one
  go(openStep(0));
})();
