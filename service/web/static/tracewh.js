// tracewh web page: the trace trees (keyboard, folding, payloads), the SQL editor's Ctrl+Enter, and
// the compare form's choices (a choice that changes the next ones submits the form).
// Loaded as a file (the page's Content-Security-Policy allows no inline script); needs htmx.
"use strict";

(function () {
  const ROW = '[role="treeitem"]';

  function level(row) { return Number(row.getAttribute("aria-level")); }
  function isFolded(row) { return row.getAttribute("aria-expanded") === "false"; }
  function rowsOf(tree) { return tree.querySelectorAll(ROW); }

  // A row is hidden when an ancestor is folded. Rows are in depth-first order, so one pass
  // with the level of the nearest folded, visible ancestor decides every row.
  function refresh(tree) {
    let foldedAt = Infinity;
    for (const row of rowsOf(tree)) {
      const depth = level(row);
      if (depth <= foldedAt) foldedAt = Infinity;
      const hidden = foldedAt < depth;
      if (row.hidden !== hidden) row.hidden = hidden;
      if (!hidden && isFolded(row)) foldedAt = depth;
    }
  }

  function setFolded(tree, row, folded) {
    if (!row.hasAttribute("aria-expanded")) return;
    row.setAttribute("aria-expanded", folded ? "false" : "true");
    refresh(tree);
  }

  function visibleRows(tree) { return Array.from(rowsOf(tree)).filter((row) => !row.hidden); }

  function select(tree, row, focus) {
    const current = tree.querySelector(ROW + '[aria-selected="true"]');
    if (current) current.setAttribute("aria-selected", "false");
    for (const other of tree.querySelectorAll(ROW + '[tabindex="0"]')) other.setAttribute("tabindex", "-1");
    row.setAttribute("aria-selected", "true");
    row.setAttribute("tabindex", "0");
    if (focus) row.focus();
  }

  function showPayload(tree, row) {
    if (!row.dataset.event) { setFolded(tree, row, !isFolded(row)); return; }  // a group of state diffs: no event
    const url = tree.dataset.eventsUrl + "&event=" + encodeURIComponent(row.dataset.event);
    htmx.ajax("GET", url, { target: tree.dataset.payload || "#payload", swap: "innerHTML" });
  }

  function parentOf(row) {
    for (let r = row.previousElementSibling; r; r = r.previousElementSibling) {
      if (r.matches(ROW) && level(r) < level(row)) return r;
    }
    return null;
  }

  function step(tree, row, by) {
    const rows = visibleRows(tree);
    const at = rows.indexOf(row);
    return rows[Math.min(Math.max(at + by, 0), rows.length - 1)];
  }

  function onKey(tree, event) {
    const row = event.target.closest(ROW);
    if (!row) return;
    let next = null;
    switch (event.key) {
      case "ArrowDown": next = step(tree, row, 1); break;
      case "ArrowUp": next = step(tree, row, -1); break;
      case "Home": next = visibleRows(tree)[0]; break;
      case "End": next = visibleRows(tree).pop(); break;
      case "ArrowRight":
        if (isFolded(row)) setFolded(tree, row, false); else if (row.hasAttribute("aria-expanded")) next = step(tree, row, 1);
        break;
      case "ArrowLeft":
        if (row.getAttribute("aria-expanded") === "true") setFolded(tree, row, true); else next = parentOf(row);
        break;
      case "Enter": case " ": showPayload(tree, row); break;
      default: return;
    }
    event.preventDefault();
    if (next) select(tree, next, true);
  }

  function onClick(tree, event) {
    const row = event.target.closest(ROW);
    if (!row) return;
    select(tree, row, true);
    if (event.target.closest(".twisty") && row.dataset.event) setFolded(tree, row, !isFolded(row));
    else showPayload(tree, row);
  }

  function foldAll(tree, fold) {
    for (const row of rowsOf(tree)) {
      if (!row.hasAttribute("aria-expanded")) continue;
      const delegation = row.classList.contains("k-delegation");
      row.setAttribute("aria-expanded", fold && delegation ? "false" : "true");
    }
    refresh(tree);
  }

  function setUpTree(tree) {
    tree.addEventListener("keydown", (event) => onKey(tree, event));
    tree.addEventListener("click", (event) => onClick(tree, event));
    // More rows arrived (htmx swapped them in): fold them as their ancestors are folded.
    tree.addEventListener("htmx:afterSettle", () => refresh(tree));
    for (const button of document.querySelectorAll("[data-trace]")) {
      button.addEventListener("click", () => foldAll(tree, button.dataset.trace === "fold"));
    }
    tree.dataset.ready = "true";
  }

  function setUpSqlEditor(textarea) {
    textarea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        textarea.form.requestSubmit();
      }
    });
  }

  // A select whose choice decides the form's other choices (the compare page's view, its by
  // column): the fields it names are cleared, as they belonged to the old choice, and the
  // form is sent to fill them anew.
  function setUpChoice(select) {
    select.addEventListener("change", () => {
      for (const name of select.dataset.submitClears.split(" ")) {
        for (const field of select.form.querySelectorAll(`[name="${name}"]`)) {
          if (field.multiple) for (const option of field.options) option.selected = false;
          else field.value = "";
        }
      }
      select.form.requestSubmit();
    });
  }

  function start() {
    for (const tree of document.querySelectorAll('[role="tree"]')) setUpTree(tree);
    for (const select of document.querySelectorAll("select[data-submit-clears]")) setUpChoice(select);
    const editor = document.querySelector("form.sql textarea");
    if (editor) setUpSqlEditor(editor);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
