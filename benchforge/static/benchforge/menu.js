// The header's menu on narrow screens. Loaded without defer, so the "js" class is on <html>
// before the body is drawn: without JavaScript the menu simply stays open (app.css collapses it
// only under .js). One delegated listener: the button toggles header.menu-open and says so
// in aria-expanded; Escape closes the menu and gives the focus back to the button.
(function () {
  document.documentElement.classList.add("js");
  function setOpen(open) {
    const header = document.getElementById("site-header");
    const button = document.getElementById("menu-toggle");
    if (!header || !button) return;
    header.classList.toggle("menu-open", open);
    button.setAttribute("aria-expanded", open ? "true" : "false");
    return button;
  }
  document.addEventListener("click", function (ev) {
    const button = ev.target.closest && ev.target.closest("#menu-toggle");
    if (button) setOpen(button.getAttribute("aria-expanded") !== "true");
  });
  document.addEventListener("keydown", function (ev) {
    const header = document.getElementById("site-header");
    if (ev.key === "Escape" && header && header.classList.contains("menu-open")) {
      const button = setOpen(false);
      if (button && header.contains(document.activeElement)) button.focus();
    }
  });
})();
