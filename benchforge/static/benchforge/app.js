// The Content-Security-Policy allows no inline script or style, so what templates used to do
// inline lives here: confirmation prompts (form[data-confirm]) and bar sizes (data-width /
// data-height, applied through the DOM, which the policy allows) on load and after htmx swaps;
// sideways-scrolling boxes get a tab stop.
(function () {
  document.addEventListener("submit", function (ev) {
    const form = ev.target.closest && ev.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.dataset.confirm)) ev.preventDefault();
  });
  const SIZE = /^\d+(\.\d+)?(%|px)$/;
  function sizeBars(root) {
    root.querySelectorAll("[data-width], [data-height]").forEach(function (el) {
      if (SIZE.test(el.dataset.width || "")) el.style.width = el.dataset.width;
      if (SIZE.test(el.dataset.height || "")) el.style.height = el.dataset.height;
    });
  }
  // A box that scrolls sideways (a wide table on a phone) must be reachable with the keyboard.
  function focusableScrollers(root) {
    const boxes = root.querySelectorAll ? root.querySelectorAll(".table, .table-scroll, pre") : [];
    boxes.forEach(function (el) {
      if (el.scrollWidth > el.clientWidth + 1) {
        if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
      } else if (el.getAttribute("tabindex") === "0") {
        el.removeAttribute("tabindex");
      }
    });
  }
  function onLoad(root) { sizeBars(root); focusableScrollers(root); }
  if (window.htmx) window.htmx.onLoad(onLoad);
  else document.addEventListener("DOMContentLoaded", function () { onLoad(document); });
  let resizing = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizing);
    resizing = setTimeout(function () { focusableScrollers(document); }, 150);
  });
})();
