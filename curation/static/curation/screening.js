// Screening grid: keyboard focus moves between tiles, keys accept / reject / reset the focused
// image (or every selected one), results come from the screening API and are drawn in place.
(function () {
  "use strict";
  const grid = document.getElementById("image-grid");
  if (!grid) return;
  const screenUrl = grid.dataset.screenUrl;
  const progressUrl = grid.dataset.progressUrl;
  const csrf = document.querySelector("input[name=csrfmiddlewaretoken]").value;
  const reasons = JSON.parse(document.getElementById("reject-reasons").textContent); // [key, value, label]
  const statusLabels = JSON.parse(document.getElementById("status-labels").textContent);
  // What the script says, in the page's language; "%(n)s" and "%(status)s" are filled in here.
  const words = JSON.parse(document.getElementById("screening-words").textContent);
  const reasonByKey = Object.fromEntries(reasons.map(([key, value, label]) => [key, { value, label }]));
  const otherReason = "other";
  const selection = new Set();
  const message = document.getElementById("screen-message");
  const noteDialog = document.getElementById("note-dialog");
  const noteInput = document.getElementById("note-input");
  const preview = document.getElementById("preview");
  let pendingNoteIds = null;

  const tiles = () => Array.from(grid.querySelectorAll(".tile"));
  const tileById = (id) => grid.querySelector('.tile[data-id="' + id + '"]');
  const focusedTile = () => grid.querySelector('.tile[tabindex="0"]');

  function say(text, isError) {
    message.textContent = text;
    message.classList.toggle("error", Boolean(isError));
  }

  function focusTile(tile, scroll) {
    if (!tile) return;
    tiles().forEach((t) => t.setAttribute("tabindex", t === tile ? "0" : "-1"));
    tile.focus({ preventScroll: !scroll });
    if (scroll) tile.scrollIntoView({ block: "nearest" });
  }

  function columns() {
    const all = tiles();
    if (!all.length) return 1;
    const top = all[0].offsetTop;
    const n = all.findIndex((t) => t.offsetTop !== top);
    return n === -1 ? all.length : n;
  }

  function move(step) {
    const all = tiles();
    if (!all.length) return;
    const index = all.indexOf(focusedTile());
    const next = Math.min(all.length - 1, Math.max(0, (index === -1 ? 0 : index + step)));
    focusTile(all[next], true);
  }

  function showSelection() {
    tiles().forEach((t) => {
      const picked = selection.has(t.dataset.id);
      t.setAttribute("aria-selected", picked ? "true" : "false");
      t.querySelector(".pick").classList.toggle("checked", picked);
    });
    document.getElementById("selection-count").textContent = selection.size
      ? words.selected.replace("%(n)s", selection.size)
      : words.nothing_selected;
  }

  function toggle(tile) {
    if (!tile) return;
    const id = tile.dataset.id;
    if (selection.has(id)) selection.delete(id); else selection.add(id);
    showSelection();
  }

  function clearSelection() {
    selection.clear();
    showSelection();
  }

  function drawTile(image) {
    const tile = tileById(image.id);
    if (!tile) return;
    tile.classList.remove("status-" + tile.dataset.status, "busy");
    tile.dataset.status = image.status;
    tile.classList.add("status-" + image.status);
    tile.querySelector(".state").textContent = statusLabels[image.status];
    const reason = image.reject_reason_label + (image.reject_note ? ": " + image.reject_note : "");
    tile.querySelector(".reason").textContent = image.status === "rejected" ? reason : "";
  }

  function drawCounts(counts) {
    let total = 0;
    for (const [status, n] of Object.entries(counts)) {
      const el = document.querySelector("#count-" + status + " b");
      if (el) el.textContent = n;
      total += n;
    }
    document.getElementById("count-all").textContent = total;
  }

  async function redrawProgress() {
    const resp = await fetch(progressUrl, { headers: { Accept: "text/html" }, credentials: "same-origin" });
    if (resp.ok) document.getElementById("task-progress").outerHTML = await resp.text();
  }

  // The images an action applies to: the selection, else the focused tile.
  function targets() {
    if (selection.size) return { ids: Array.from(selection), bulk: true };
    const tile = focusedTile();
    return { ids: tile ? [tile.dataset.id] : [], bulk: false };
  }

  async function screen(ids, bulk, action, reason, note) {
    if (!ids.length) { say(words.focus_first, true); return; }
    if (bulk) clearSelection();
    else move(1); // go on at once; the answer is drawn on the tile whenever it arrives
    ids.forEach((id) => tileById(id) && tileById(id).classList.add("busy"));
    let resp, data = {};
    try {
      resp = await fetch(screenUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify({ ids: ids.map(Number), action, reason: reason || "", note: note || "" }),
      });
      data = await resp.json();
    } catch (err) {
      data = { detail: words.unreachable };
    }
    if (!resp || !resp.ok) {
      ids.forEach((id) => tileById(id) && tileById(id).classList.remove("busy"));
      say(data.detail || words.failed.replace("%(status)s", resp && resp.status), true);
      return;
    }
    data.images.forEach(drawTile);
    drawCounts(data.counts);
    const what = action === "accept" ? words.accepted : action === "reset" ? words.reset : words.rejected;
    const label = reason && reasons.find(([, value]) => value === reason);
    say(what + " " + ids.map((id) => "#" + id).join(", ") + (reason ? " (" + (label ? label[2] : reason) + ")" : ""));
    redrawProgress();
  }

  function act(action, reason) {
    const { ids, bulk } = targets();
    if (action === "reject" && reason === otherReason) {
      if (!ids.length) { say(words.focus_first, true); return; }
      pendingNoteIds = { ids, bulk };
      noteInput.value = "";
      noteDialog.showModal();
      noteInput.focus();
      return;
    }
    screen(ids, bulk, action, reason);
  }

  document.getElementById("note-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const note = noteInput.value.trim();
    if (!note) return;
    noteDialog.close();
    const { ids, bulk } = pendingNoteIds;
    pendingNoteIds = null;
    screen(ids, bulk, "reject", otherReason, note);
  });
  document.getElementById("note-cancel").addEventListener("click", () => noteDialog.close());
  noteDialog.addEventListener("close", () => {
    pendingNoteIds = null;
    const tile = focusedTile();
    if (tile) tile.focus({ preventScroll: true });
  });

  function openPreview() {
    const tile = focusedTile();
    if (!tile) return;
    document.getElementById("preview-img").src = tile.dataset.file;
    preview.showModal();
  }
  preview.addEventListener("click", () => preview.close());

  document.addEventListener("keydown", (ev) => {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (document.querySelector("dialog[open]")) return; // dialogs handle their own keys
    const target = ev.target;
    if (target.closest && target.closest('input:not([type=checkbox]), textarea, select, [contenteditable]')) return;
    const key = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    const moves = { ArrowLeft: -1, h: -1, ArrowRight: 1, l: 1, ArrowUp: -columns(), k: -columns(), ArrowDown: columns(), j: columns() };
    let handled = true;
    if (key in moves) move(moves[key]);
    else if (key === "a") act("accept");
    else if (key === "u") act("reset");
    else if (key in reasonByKey) act("reject", reasonByKey[key].value);
    else if (key === "x") toggle(focusedTile());
    else if (key === "Escape") clearSelection();
    else if (key === "o" || (key === "Enter" && target.classList.contains("tile"))) openPreview();
    else handled = false;
    if (handled) ev.preventDefault();
  });

  grid.addEventListener("click", (ev) => {
    const tile = ev.target.closest(".tile");
    if (!tile || ev.target.closest("a")) return;
    if (ev.target.classList.contains("pick")) toggle(tile);
    focusTile(tile, false);
  });

  document.getElementById("bulk-accept").addEventListener("click", () => act("accept"));
  document.getElementById("bulk-reject").addEventListener("click", () => act("reject", document.getElementById("bulk-reason").value));
  document.getElementById("bulk-reset").addEventListener("click", () => act("reset"));
  document.getElementById("select-page").addEventListener("click", () => {
    tiles().forEach((t) => selection.add(t.dataset.id));
    showSelection();
  });
  document.getElementById("clear-selection").addEventListener("click", clearSelection);

  // Filters apply as soon as one changes.
  document.querySelectorAll("#grid-filters select").forEach((el) =>
    el.addEventListener("change", () => el.form.requestSubmit()));

  const first = focusedTile();
  if (first) first.focus({ preventScroll: true });
})();
