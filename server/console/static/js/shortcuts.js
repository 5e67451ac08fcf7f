// Keyboard shortcuts: / searches, n claim next, a/r/e choose the verdict, Enter submits, ?
// lists them. A view sets its handlers; keys typed into a text field stay text.

import { h } from "./dom.js";
import { focusSearch } from "./searchbox.js";

export const SHORTCUTS = [
  ["/", "Search cases: an item's id or external key opens the item"],
  ["n", "Claim the next item"],
  ["a", "Choose Approve (the reasons narrow to approving ones)"],
  ["r", "Choose Reject"],
  ["e", "Choose Escalate"],
  ["Enter", "Submit the decision with the chosen reason"],
  ["?", "Show this list"],
  ["Esc", "Close this list"],
];

let handlers = {};
let dialog = null;

/** The current view's handlers, by key ("n", "a", "r", "e", "Enter"). */
export function setHandlers(next) {
  handlers = next || {};
}

function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["checkbox", "radio", "button", "submit", "reset"].includes(target.type);
  }
  return false;
}

function shortcutsDialog() {
  if (dialog) return dialog;
  dialog = h(
    "dialog",
    { class: "shortcuts", "aria-labelledby": "shortcuts-title" },
    h("h2", { id: "shortcuts-title" }, "Keyboard shortcuts"),
    h(
      "dl",
      { class: "shortcut-list" },
      SHORTCUTS.map(([key, what]) => h("div", {}, h("dt", {}, h("kbd", { text: key })), h("dd", { text: what }))),
    ),
    h("p", { class: "muted" }, "In a text box, keys are text. Ctrl+Enter submits the decision from the Decision note, and adds the note from Activity's Note."),
    h("form", { method: "dialog" }, h("button", { class: "button", type: "submit" }, "Close")),
  );
  document.body.append(dialog);
  return dialog;
}

export function showShortcuts() {
  const d = shortcutsDialog();
  if (!d.open) d.showModal();
}

export function install() {
  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.altKey || event.metaKey) return;
    if (dialog?.open) return;
    const inText = typing(event.target);
    if (event.key === "Enter") {
      // Enter on a button presses that button; in the note it is a new line unless Ctrl.
      if (event.target instanceof HTMLButtonElement || event.target instanceof HTMLAnchorElement) return;
      if (inText && !(event.ctrlKey && event.target instanceof HTMLTextAreaElement)) return;
      if (handlers.Enter) {
        event.preventDefault();
        handlers.Enter();
      }
      return;
    }
    if (inText || event.ctrlKey) return;
    if (event.key === "/" && focusSearch()) {
      event.preventDefault();
      return;
    }
    if (event.key === "?") {
      event.preventDefault();
      showShortcuts();
      return;
    }
    const handler = handlers[event.key.toLowerCase()];
    if (handler && event.key.length === 1) {
      event.preventDefault();
      handler();
    }
  });
}
