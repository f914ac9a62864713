// Keyboard shortcuts shared by every queue page: an element with data-key="s" (or
// data-key="ctrl+s", or several keys separated by spaces: data-key="2 b") is clicked when that key is pressed. Plain keys are ignored while
// typing in a field (not on a focused radio button or checkbox); keys with ctrl/meta work everywhere. base.html loads this file without
// defer, so the listener exists before the body is parsed: a key pressed the moment a page
// shows (the next item opened by N, then R at once) is never lost to a script still loading.
(function () {
  function keyName(ev) {
    let k = ev.key.length === 1 ? ev.key.toLowerCase() : ev.key;
    if (ev.ctrlKey || ev.metaKey) k = "ctrl+" + k;
    if (ev.altKey) k = "alt+" + k;
    return k;
  }
  document.addEventListener("keydown", function (ev) {
    // A focused radio button, checkbox or button takes no text: page keys still work there.
    const typing = ev.target.closest && ev.target.closest(
      "input:not([type=radio]):not([type=checkbox]):not([type=button]):not([type=submit]), textarea, select, [contenteditable]");
    const name = keyName(ev);
    if (typing && !name.startsWith("ctrl+") && name !== "Escape") return;
    const el = document.querySelector('[data-key~="' + CSS.escape(name) + '"]');
    if (el && !el.disabled) { ev.preventDefault(); el.click(); }
  });
})();
