// The Content-Security-Policy allows no inline script or style, so what templates used to do
// inline lives here: confirmation prompts (form[data-confirm]) and bar sizes (data-width /
// data-height, applied through the DOM, which the policy allows) on load and after htmx swaps.
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
  if (window.htmx) window.htmx.onLoad(sizeBars);
  else document.addEventListener("DOMContentLoaded", function () { sizeBars(document); });
})();
