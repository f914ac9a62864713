// Verification page keys: J/K move between rewrites, A approves, E opens the editor (Ctrl+Enter
// saves), X opens the reasons (1-5 picks one and rejects; "other" asks for a comment first),
// Esc closes what is open, N goes to the next seed. Every action is a plain form POST.
(function () {
  const list = document.getElementById("rewrite-list");
  if (!list) return;
  const rows = Array.from(list.querySelectorAll(".rewrite"));
  let at = -1;
  let mode = "";

  function closeAll() {
    rows.forEach(function (row) {
      row.querySelectorAll(".edit-form, .reject-form").forEach(function (f) { f.hidden = true; });
    });
    mode = "";
  }

  function select(index) {
    if (!rows.length) return;
    closeAll();
    at = Math.max(0, Math.min(rows.length - 1, index));
    rows.forEach(function (row, i) { row.classList.toggle("selected", i === at); });
    rows[at].scrollIntoView({ block: "nearest" });
    rows[at].focus({ preventScroll: true });
  }

  function submit(form) {
    if (form.requestSubmit) form.requestSubmit();
    else form.submit();
  }

  function current() { return at >= 0 ? rows[at] : null; }

  function openForm(selector) {
    const row = current();
    const form = row && row.querySelector(selector);
    if (!form) return null;
    closeAll();
    form.hidden = false;
    return form;
  }

  // After an action the address names the rewrite acted on: stay on it while it is still to
  // verify (an edit), else go to the next one still to verify; on arrival, the first.
  function pendingFrom(start) {
    for (let i = 0; i < rows.length; i++) {
      const j = (start + i) % rows.length;
      if (rows[j].dataset.state === "pending") return j;
    }
    return -1;
  }
  const fromHash = location.hash ? rows.findIndex(function (r) { return "#" + r.id === location.hash; }) : -1;
  const start = fromHash >= 0 ? pendingFrom(fromHash) : pendingFrom(0);
  select(start >= 0 ? start : Math.max(0, fromHash));

  rows.forEach(function (row, i) {
    row.addEventListener("click", function (ev) {
      if (!ev.target.closest("form, a")) select(i);
    });
  });

  document.addEventListener("keydown", function (ev) {
    const typing = ev.target.closest && ev.target.closest("input[type=text], textarea");
    if (ev.key === "Escape") {
      closeAll();
      if (typing) typing.blur();
      ev.preventDefault();
      return;
    }
    if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter") {
      const form = ev.target.closest && ev.target.closest("form");
      if (form) { ev.preventDefault(); submit(form); }
      return;
    }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const key = ev.key.toLowerCase();
    if (mode === "reject" && /^[1-5]$/.test(key)) {
      const form = current().querySelector(".reject-form");
      const radio = form.querySelector('[data-reason-key="' + key + '"]');
      radio.checked = true;
      ev.preventDefault();
      if (radio.value === "other") form.querySelector("input[name=comment]").focus();
      else submit(form);
      return;
    }
    let handled = true;
    if (key === "j") select(at + 1);
    else if (key === "k") select(at - 1);
    else if (key === "a") {
      const form = current() && current().querySelector(".approve-form");
      if (form) submit(form);
    } else if (key === "e") {
      const form = openForm(".edit-form");
      if (form) {
        const area = form.querySelector("textarea");
        area.focus();
        area.setSelectionRange(area.value.length, area.value.length);
        mode = "edit";
      }
    } else if (key === "x") {
      if (openForm(".reject-form")) mode = "reject";
    } else if (key === "n") {
      const next = document.getElementById("next-seed");
      if (next) next.click();
    } else handled = false;
    if (handled) ev.preventDefault();
  });
})();
