// An item's payload as a person reads it: nested keys as sections, lists as lists, long
// strings wrapped, numbers and booleans set apart. The raw JSON is one click away, never
// the default.

import { h } from "./dom.js";
import { when, words } from "./format.js";

const MAX_DEPTH = 8;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

function isPlainObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function scalar(value) {
  if (value === null) return h("span", { class: "value value-null", text: "empty" });
  if (typeof value === "boolean") return h("span", { class: `value value-bool value-${value}`, text: value ? "yes" : "no" });
  if (typeof value === "number") return h("span", { class: "value value-number", text: String(value) });
  const text = String(value);
  if (text === "") return h("span", { class: "value value-null", text: "empty" });
  if (TIMESTAMP.test(text) && !Number.isNaN(Date.parse(text))) {
    // A moment in time, in the reader's own zone; the text as sent stays in the title.
    return h("time", { class: "value value-time", datetime: text, title: text, text: when(text) });
  }
  return h("span", { class: ["value", "value-string", text.length > 120 && "value-long"], text });
}

function isScalar(value) {
  return value === null || typeof value !== "object";
}

export function renderValue(value, depth) {
  if (isScalar(value)) return scalar(value);
  if (depth >= MAX_DEPTH) return h("code", { class: "value value-json", text: JSON.stringify(value) });
  if (Array.isArray(value)) {
    if (value.length === 0) return h("span", { class: "value value-null", text: "none" });
    if (value.every(isScalar)) {
      return h("ul", { class: "chips" }, value.map((entry) => h("li", {}, scalar(entry))));
    }
    return h(
      "ol",
      { class: "payload-list" },
      value.map((entry) => h("li", {}, isPlainObject(entry) ? renderObject(entry, depth + 1) : renderValue(entry, depth + 1))),
    );
  }
  return renderObject(value, depth + 1);
}

function renderObject(object, depth) {
  const entries = Object.entries(object);
  if (entries.length === 0) return h("span", { class: "value value-null", text: "none" });
  // Plain fields first, then the nested groups, each under its own heading.
  const flat = entries.filter(([, value]) => isScalar(value) || (Array.isArray(value) && value.every(isScalar)));
  const nested = entries.filter((entry) => !flat.includes(entry));
  return h(
    "div",
    { class: "payload-object" },
    flat.length
      ? h(
          "dl",
          { class: "payload-fields" },
          flat.map(([key, value]) =>
            h("div", { class: "payload-field" }, h("dt", { title: key, text: words(key) }), h("dd", {}, renderValue(value, depth))),
          ),
        )
      : null,
    nested.map(([key, value]) =>
      h(
        "section",
        { class: "payload-group", "aria-label": words(key) },
        h("h4", { class: "payload-heading", title: key, text: words(key) }),
        renderValue(value, depth),
      ),
    ),
  );
}

/** The payload, readable, with a disclosure for the raw JSON. */
export function renderPayload(payload, { label = "Payload" } = {}) {
  return h(
    "div",
    { class: "payload", "aria-label": label, role: "group" },
    isPlainObject(payload) ? renderObject(payload, 0) : renderValue(payload, 0),
    h(
      "details",
      { class: "raw-json" },
      h("summary", {}, "Show raw JSON"),
      h("pre", { text: JSON.stringify(payload, null, 2) }),
    ),
  );
}
