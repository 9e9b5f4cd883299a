// tracewh labelling page: number keys 1..9 press the label buttons, s skips, u goes back to
// the previous item (undo). Loaded as a file (the page's Content-Security-Policy allows no
// inline script). Keys typed into a box (the note) are text, not commands.
"use strict";

(function () {
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (event.target.closest && event.target.closest("input, textarea, select, [contenteditable]")) return;
    if (!/^[1-9su]$/.test(event.key)) return;
    const control = document.querySelector('[data-key="' + event.key + '"]');
    if (!control || control.disabled) return;
    event.preventDefault();
    // One answer per page: a second key press before the next item shows sends nothing.
    for (const other of document.querySelectorAll("[data-key]")) other.setAttribute("aria-disabled", "true");
    if (document.body.dataset.sent) return;
    document.body.dataset.sent = "1";
    control.click();
  });
  document.body.dataset.keys = "ready";  // tests and the bench wait for this: the keys work from here on
})();
