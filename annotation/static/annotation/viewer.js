// Zoomable image viewer shared by the item editor and the review page: click or wheel to zoom
// around the pointer, drag to pan, thumbnails switch the image.
(function () {
  // Image sources come from data-src of thumbnails and of the editor's image chips.
  const stage = document.getElementById("viewer-stage");
  const img = document.getElementById("viewer-img");
  if (stage && img) {
    let scale = 1, fit = 1, x = 0, y = 0, drag = null, moved = false;
    function apply() {
      img.style.transform = "translate(" + x + "px," + y + "px) scale(" + scale * fit + ")";
      stage.classList.toggle("zoomed", scale > 1);
    }
    function reset() {
      const w = img.naturalWidth || 1, h = img.naturalHeight || 1;
      fit = Math.min(stage.clientWidth / w, stage.clientHeight / h);
      scale = 1;
      x = (stage.clientWidth - w * fit) / 2;
      y = (stage.clientHeight - h * fit) / 2;
      apply();
    }
    function zoomAt(factor, px, py) {
      const next = Math.min(12, Math.max(1, scale * factor));
      if (next === 1) { reset(); return; }
      x = px - (px - x) * (next / scale);
      y = py - (py - y) * (next / scale);
      scale = next;
      apply();
    }
    function point(ev) {
      const r = stage.getBoundingClientRect();
      return [ev.clientX - r.left, ev.clientY - r.top];
    }
    img.addEventListener("load", reset);
    if (img.complete) reset();
    window.addEventListener("resize", reset);
    stage.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      const p = point(ev);
      zoomAt(Math.exp(-ev.deltaY / 300), p[0], p[1]);
    }, { passive: false });
    stage.addEventListener("mousedown", function (ev) { drag = [ev.clientX, ev.clientY, x, y]; moved = false; });
    window.addEventListener("mousemove", function (ev) {
      if (!drag || scale === 1) return;
      const dx = ev.clientX - drag[0], dy = ev.clientY - drag[1];
      if (Math.abs(dx) + Math.abs(dy) > 3) { moved = true; stage.classList.add("dragging"); }
      x = drag[2] + dx; y = drag[3] + dy;
      apply();
    });
    window.addEventListener("mouseup", function () { drag = null; stage.classList.remove("dragging"); });
    stage.addEventListener("click", function (ev) {
      if (moved) return;
      const p = point(ev);
      zoomAt(ev.shiftKey ? 0.5 : 2, p[0], p[1]);
    });
    document.querySelectorAll("[data-zoom]").forEach(function (button) {
      button.addEventListener("click", function () {
        const cx = stage.clientWidth / 2, cy = stage.clientHeight / 2;
        if (button.dataset.zoom === "in") zoomAt(1.5, cx, cy);
        else if (button.dataset.zoom === "out") zoomAt(1 / 1.5, cx, cy);
        else reset();
      });
    });
    document.addEventListener("click", function (ev) {
      const source = ev.target.closest(".viewer-thumbs .thumb, .image-chip");
      if (!source || ev.target.closest("button[data-action]")) return;
      img.src = source.dataset.src;
    });
  }
})();
