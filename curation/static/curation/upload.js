// Drag-and-drop upload: files go to the image API in small batches, one batch at a time, and
// each file's result (added, duplicate, or the reason it was refused) is listed as it returns.
(function () {
  "use strict";
  const form = document.getElementById("upload-form");
  if (!form) return;
  const zone = document.getElementById("dropzone");
  const input = document.getElementById("upload-input");
  const rows = document.querySelector("#upload-results tbody");
  const summary = document.getElementById("upload-summary");
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const words = JSON.parse(document.getElementById("upload-words").textContent);
  const BATCH_FILES = 8;
  const BATCH_BYTES = 40 * 1024 * 1024;
  const totals = { added: 0, duplicate: 0, error: 0, waiting: 0 };
  let queue = Promise.resolve();

  function showTotals() {
    const done = words.totals.replace("%(added)s", totals.added).replace("%(duplicate)s", totals.duplicate)
      .replace("%(error)s", totals.error);
    summary.textContent = done + (totals.waiting ? ", " + words.still_uploading.replace("%(n)s", totals.waiting) : ".");
  }

  function row(file) {
    const tr = document.createElement("tr");
    tr.className = "outcome-waiting";
    tr.dataset.name = file.name;
    for (const text of [file.name, words.uploading, ""]) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    tr.children[1].className = "outcome";
    rows.appendChild(tr);
    return tr;
  }

  function fill(tr, outcome, text) {
    tr.className = "outcome-" + outcome;
    tr.children[1].textContent = words.outcomes[outcome] || outcome;
    tr.children[2].textContent = text;
    totals.waiting -= 1;
    totals[outcome] += 1;
  }

  function batches(files) {
    const out = [];
    let current = [], bytes = 0;
    for (const file of files) {
      if (current.length && (current.length >= BATCH_FILES || bytes + file.size > BATCH_BYTES)) {
        out.push(current);
        current = [];
        bytes = 0;
      }
      current.push(file);
      bytes += file.size;
    }
    if (current.length) out.push(current);
    return out;
  }

  async function send(batch, trs) {
    const body = new FormData();
    batch.forEach((file) => body.append("files", file, file.name));
    Array.from(form.elements.tasks.selectedOptions).forEach((opt) => body.append("tasks", opt.value));
    body.append("source", form.elements.source.value);
    body.append("license", form.elements.license.value);
    let resp, data = {};
    try {
      resp = await fetch(form.dataset.apiUrl, {
        method: "POST", body, credentials: "same-origin",
        headers: { Accept: "application/json", "X-CSRFToken": csrf },
      });
      data = await resp.json();
    } catch (err) {
      data = { detail: words.unreachable };
    }
    if (resp && resp.ok) {
      // One result per file, in the order sent.
      data.results.forEach((result, i) => {
        const text = result.outcome === "error" ? result.message : words.image.replace("%(id)s", result.image_id) + " " + result.message;
        fill(trs[i], result.outcome, text);
      });
    } else {
      trs.forEach((tr) => fill(tr, "error", data.detail || words.failed.replace("%(status)s", resp && resp.status)));
    }
    showTotals();
  }

  function add(fileList) {
    const files = Array.from(fileList);
    if (!files.length) return;
    totals.waiting += files.length;
    showTotals();
    for (const batch of batches(files)) {
      const trs = batch.map(row);
      queue = queue.then(() => send(batch, trs));
    }
  }

  input.addEventListener("change", () => {
    add(input.files);
    input.value = "";
  });
  ["dragenter", "dragover"].forEach((name) => zone.addEventListener(name, (ev) => {
    ev.preventDefault();
    zone.classList.add("over");
  }));
  ["dragleave", "drop"].forEach((name) => zone.addEventListener(name, () => zone.classList.remove("over")));
  zone.addEventListener("drop", (ev) => {
    ev.preventDefault();
    add(ev.dataTransfer.files);
  });
})();
