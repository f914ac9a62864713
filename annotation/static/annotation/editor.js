// Item editor: zoomable image viewer, kind switch, history / option / criterion / image lists,
// and the save protocol (every save carries the version it started from; a 409 shows the other
// person's version beside ours and pauses autosave until the user chooses).
(function () {
  const form = document.getElementById("item-form");
  if (!form) return;
  const LETTERS = "ABCD";
  let dirty = false;
  let conflict = false;
  let navigateAfterSave = null;

  function changed() {
    // Programmatic list edits count as typing: they mark the form dirty and trigger autosave.
    form.dispatchEvent(new Event("input", { bubbles: true }));
  }

  // ---- save protocol -------------------------------------------------------------------------
  form.addEventListener("input", function () { dirty = true; });
  document.body.addEventListener("htmx:beforeSwap", function (ev) {
    const status = ev.detail.xhr.status;
    if (status === 400 || status === 403 || status === 409) { ev.detail.shouldSwap = true; ev.detail.isError = false; }
  });
  document.body.addEventListener("htmx:beforeRequest", function (ev) {
    // While a conflict is on screen, autosave waits: the user decides first.
    if (conflict && ev.detail.elt === form) ev.preventDefault();
  });
  document.body.addEventListener("htmx:afterRequest", function (ev) {
    const status = ev.detail.xhr.status;
    if (status === 409) { conflict = true; navigateAfterSave = null; return; }
    if (status >= 200 && status < 300) {
      dirty = false;
      if (navigateAfterSave) { const url = navigateAfterSave; navigateAfterSave = null; window.location.href = url; }
    } else {
      navigateAfterSave = null;
    }
  });
  document.addEventListener("click", function (ev) {
    const choice = ev.target.closest("[data-conflict]");
    if (!choice) return;
    if (choice.dataset.conflict === "keep-mine") {
      document.getElementById("item-version").value = choice.dataset.version;
      conflict = false;
      document.getElementById("save-button").click();
    } else {
      dirty = false;
      window.location.reload();
    }
  });
  // "Next" saves pending edits first, so moving on never drops text.
  document.querySelectorAll("#next-link, a.next-link").forEach(function (link) {
    link.addEventListener("click", function (ev) {
      const save = document.getElementById("save-button");
      if (!dirty || !save || conflict) return;
      ev.preventDefault();
      navigateAfterSave = link.href;
      save.click();
    });
  });

  // ---- kind and task ---------------------------------------------------------------------------
  function showKind() {
    const checked = form.querySelector("input[name=kind]:checked");
    const kind = checked ? checked.value : "single_turn";
    form.querySelectorAll("[data-kind-section]").forEach(function (section) {
      section.hidden = section.dataset.kindSection !== kind;
    });
    const label = document.getElementById("question-label");
    // The words come from the page, in its language.
    if (label) label.textContent = kind === "multi_turn" ? label.dataset.multi : label.dataset.single;
  }
  form.addEventListener("change", function (ev) {
    if (ev.target.name === "kind") showKind();
    if (ev.target.id === "task-select") showGuideline(ev.target.value);
  });

  function showGuideline(slug) {
    const all = JSON.parse(document.getElementById("task-guidelines").textContent);
    const task = all[slug];
    if (!task) return;
    document.querySelectorAll("#guideline [data-field]").forEach(function (el) {
      // An English text beside the benchmark's own shows only when the task has one.
      if (el.dataset.alias !== undefined) el.hidden = !task[el.dataset.field];
      el.textContent = task[el.dataset.field] || "—";
    });
  }

  // ---- repeatable lists ------------------------------------------------------------------------
  function fromTemplate(id) {
    return document.getElementById(id).content.firstElementChild.cloneNode(true);
  }
  function renumber() {
    const exchanges = form.querySelector("#exchanges");
    form.querySelectorAll("#exchanges .exchange").forEach(function (ex, i) {
      ex.querySelector(".exchange-n").textContent = exchanges.dataset.label + " " + (i + 1);
    });
    const options = form.querySelectorAll("#options .option");
    options.forEach(function (row, i) {
      row.querySelector(".letter").textContent = LETTERS[i];
      row.querySelector("input[type=radio]").value = LETTERS[i];
    });
    const addOption = form.querySelector("[data-action=add-option]");
    if (addOption) addOption.disabled = options.length >= 4;
    const addCriterion = form.querySelector("[data-action=add-criterion]");
    if (addCriterion) addCriterion.disabled = form.querySelectorAll("#criteria .criterion").length >= 3;
  }
  function add(listId, templateId) {
    const node = fromTemplate(templateId);
    document.getElementById(listId).appendChild(node);
    renumber();
    const field = node.querySelector("textarea, input[type=text]");
    if (field) field.focus();
    changed();
  }
  form.addEventListener("click", function (ev) {
    const button = ev.target.closest("button[data-action]");
    if (!button) return;
    const action = button.dataset.action;
    const row = button.closest(".exchange, .option, .criterion, .image-chip");
    if (action === "add-exchange") add("exchanges", "tpl-exchange");
    else if (action === "add-option") add("options", "tpl-option");
    else if (action === "add-criterion") add("criteria", "tpl-criterion");
    else if (action === "add-image") addImage();
    else if (row && action === "remove") { row.remove(); renumber(); changed(); }
    else if (row && action === "up" && row.previousElementSibling) { row.parentNode.insertBefore(row, row.previousElementSibling); renumber(); changed(); }
    else if (row && action === "down" && row.nextElementSibling) { row.parentNode.insertBefore(row.nextElementSibling, row); renumber(); changed(); }
  });

  function addImage() {
    const input = document.getElementById("add-image-id");
    const error = document.getElementById("add-image-error");
    error.textContent = "";
    const url = input.dataset.url + "?image_id=" + encodeURIComponent(input.value.trim());
    fetch(url, { credentials: "same-origin" }).then(function (resp) {
      return resp.text().then(function (body) {
        if (!resp.ok) { error.textContent = body; return; }
        const holder = document.createElement("div");
        holder.innerHTML = body.trim();
        document.getElementById("image-list").appendChild(holder.firstElementChild);
        input.value = "";
        changed();
      });
    });
  }
  const addImageInput = document.getElementById("add-image-id");
  if (addImageInput) addImageInput.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") { ev.preventDefault(); addImage(); }
  });

  showKind();
  renumber();
})();
