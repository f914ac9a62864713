// The "Browse images…" dialog (New item, and the editor's images section). Its body comes from the
// server over htmx; picking an image (click, or Enter on a focused thumbnail) puts its id where a
// typed id would go. Arrow keys move between thumbnails, row by row.
(function () {
  "use strict";
  const dialog = document.getElementById("image-picker");
  if (!dialog) return;
  const body = document.getElementById("picker-body");
  let loaded = false;

  function open() {
    if (!loaded) {
      loaded = true;
      htmx.ajax("GET", dialog.dataset.url, { target: body, swap: "innerHTML" }).then(focusFirst);
    }
    dialog.showModal();
    focusFirst();
  }

  function focusFirst() {
    const search = document.getElementById("picker-q");
    if (search) search.focus();
  }

  function picks() {
    return Array.from(dialog.querySelectorAll(".pick"));
  }

  function choose(id) {
    const target = document.getElementById(dialog.dataset.target);
    if (dialog.dataset.mode === "append") {
      const ids = target.value.split(/[\s,]+/).filter(Boolean);
      if (!ids.includes(id)) ids.push(id);
      target.value = ids.join(", ");
      target.dispatchEvent(new Event("input", { bubbles: true }));
    } else {
      target.value = id;
      const add = document.querySelector("[data-action=add-image]");
      if (add) add.click();
    }
    dialog.close();
    target.focus();
  }

  document.addEventListener("click", function (ev) {
    if (ev.target.closest("[data-picker=open]")) { ev.preventDefault(); open(); return; }
    if (ev.target.closest("[data-picker=close]")) { dialog.close(); return; }
    const pick = ev.target.closest("#image-picker .pick");
    if (pick) choose(pick.dataset.imageId);
  });

  dialog.addEventListener("keydown", function (ev) {
    const all = picks();
    const at = all.indexOf(document.activeElement);
    if (!["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown"].includes(ev.key) || !all.length) return;
    if (at < 0) {
      if (ev.key === "ArrowDown") { ev.preventDefault(); all[0].focus(); }
      return;
    }
    ev.preventDefault();
    // Thumbnails per row: how many share the first one's top edge.
    const perRow = all.filter(function (el) { return el.offsetTop === all[0].offsetTop; }).length || 1;
    const step = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -perRow, ArrowDown: perRow }[ev.key];
    const next = at + step;
    if (next >= 0 && next < all.length) all[next].focus();
    else if (ev.key === "ArrowUp") focusFirst();
  });
})();
