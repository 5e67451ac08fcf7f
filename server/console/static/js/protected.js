// The fields of an item under a privacy policy that its payload does not show: masked
// (a sensitive value the reader may reveal, with a reason), withheld (not for the reader's
// role, or a restricted subject) and erased. A masked value is fetched only when revealed:
// the server logs each reveal, with its reason, before it answers.

import { call } from "./api.js";
import { errorBox, fill, h } from "./dom.js";
import { REVEAL_FIELD } from "./operations.js";
import { renderValue } from "./payload.js";
import { refusalBox } from "./refusals.js";

const STATE_WORDS = { MASKED: "masked", WITHHELD: "withheld", ERASED: "erased" };
const STATE_TITLES = {
  MASKED: "Sensitive: shown only when you reveal it, with a reason (the reveal is logged)",
  WITHHELD: "Not shown to your role, or the person's data is restricted",
  ERASED: "Erased: the value is gone, its digest remains",
};

/** The item's hidden fields, or null when its payload hides nothing. */
export function protectedFields(item) {
  const hidden = (item.fields ?? []).filter((field) => field.state !== "VISIBLE");
  if (!hidden.length) return null;
  return h(
    "section",
    { class: "protected-fields", "aria-label": "Protected fields" },
    h("h4", { class: "payload-heading", text: "Protected fields" }),
    h("dl", { class: "payload-fields" }, hidden.map((field) => protectedField(item, field))),
  );
}

function protectedField(item, field) {
  const cell = h(
    "dd",
    {},
    h("span", { class: "value value-null", title: STATE_TITLES[field.state], text: STATE_WORDS[field.state] ?? field.state }),
    field.state === "MASKED" ? [" ", revealControl(item, field)] : null,
  );
  return h("div", { class: "payload-field", "data-path": field.path }, h("dt", { title: field.path, text: field.path }), cell);
}

function revealControl(item, field) {
  const outcome = h("div", { class: "reveal-outcome", role: "status" });
  const reason = h("input", {
    type: "text",
    name: "reason",
    "aria-required": "true",
    maxlength: "1000",
    autocomplete: "off",
    "aria-label": `Reason for revealing ${field.path}`,
  });
  const send = h("button", { type: "submit", class: "button primary", text: "Show value" });
  const cancel = h("button", { type: "button", class: "button", text: "Cancel" });
  const form = h(
    "form",
    { class: "reveal-form", hidden: true },
    h("label", {}, "Why do you need to see it? ", reason),
    " ",
    send,
    " ",
    cancel,
  );
  const open = h("button", {
    type: "button",
    class: "button",
    text: `Reveal ${field.path}`,
  });
  const holder = h("span", { class: "reveal" }, open, form, outcome);

  open.addEventListener("click", () => {
    form.hidden = false;
    open.hidden = true;
    reason.focus();
  });
  cancel.addEventListener("click", () => {
    form.hidden = true;
    open.hidden = false;
    fill(outcome);
    open.focus();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!reason.value.trim()) {
      fill(outcome, h("p", { class: "notice notice-alert", text: "Say why you need to see it." }));
      reason.focus();
      return;
    }
    send.disabled = true;
    fill(outcome);
    try {
      const input = { itemId: item.id, path: field.path, reason: reason.value };
      const result = (await call(REVEAL_FIELD, { input })).revealField;
      if (result.__typename === "RevealedField") {
        // The value in the field's place; the reveal is on record.
        fill(holder.parentElement, renderValue(result.value, 0), h("span", { class: "reveal-note", text: " (revealed, logged)" }));
      } else {
        fill(outcome, refusalBox(result));
      }
    } catch (error) {
      fill(outcome, errorBox("Could not reveal it.", error.message));
    } finally {
      send.disabled = false;
    }
  });
  return holder;
}
