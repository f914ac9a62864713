// The rating page saves as the rater goes: choosing a score, vote or option, or pausing while writing the
// reason, posts the form in the background (X-Autosave) so nothing typed is lost; Ctrl+Enter
// still saves and opens the next answer. A rating the server refuses (no reason yet) just says why.
(function () {
  const form = document.getElementById("rating-form");
  if (!form) return;
  const status = document.getElementById("autosave-status");
  const progress = document.getElementById("rate-progress");
  let timer = null;
  let inflight = Promise.resolve();  // the background save on its way, if any
  function save() {
    const data = new FormData(form);
    if (!data.get("score") && !data.get("vote") && !data.get("choice")) return;
    inflight = fetch(form.dataset.autosave, { method: "POST", body: data, headers: { "X-Autosave": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (body) {
        status.textContent = body.saved ? status.dataset.saved : status.dataset.notSaved + " " + body.detail;
        if (body.saved && progress) progress.textContent = body.progress.done + " / " + body.progress.total;
      })
      .catch(function () { status.textContent = status.dataset.noAnswer; });
  }
  // Save and next waits for a background save still on its way: the server keeps the last save
  // it receives, and an earlier one (a choice made before the reason was typed) must not land last.
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    clearTimeout(timer);
    inflight.then(function () { form.submit(); });
  });
  form.addEventListener("change", function (ev) { if (ev.target.type === "radio") save(); });
  form.addEventListener("input", function (ev) {
    if (ev.target.name !== "reason") return;
    clearTimeout(timer);
    timer = setTimeout(save, 800);
  });
  // keys.js runs before the page is parsed, this deferred file after: a key pressed the moment the
  // page showed chose an option with nobody listening yet. What differs from the page as served
  // was chosen or typed before now, and is saved as if just done.
  const reason = form.elements.namedItem("reason");
  const early = Array.from(form.querySelectorAll("input[type=radio]")).some(function (r) { return r.checked !== r.defaultChecked; });
  if (early) save();
  else if (reason && reason.value !== reason.defaultValue) timer = setTimeout(save, 800);
})();
