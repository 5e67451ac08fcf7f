// The filters of a search as a form: one labelled control per GraphQL input field, each
// with the id `search-<field>`, so that a refusal naming a field (InvalidInput's `field`,
// LIMIT_EXCEEDED's `narrowBy`) finds its control.

import { h } from "./dom.js";
import { verdictWord, words } from "./format.js";
import { DECISION_STATUSES, ITEM_STATES, ORDERS, VERDICTS, fieldsOf, isDate } from "./searchparams.js";

// An item's activity is its last change; a decision's, when it was made.
const ORDER_LABELS = {
  items: { NEWEST_FIRST: "Newest activity first", OLDEST_FIRST: "Oldest activity first" },
  decisions: { NEWEST_FIRST: "Newest first", OLDEST_FIRST: "Oldest first" },
};
// Hints under a few controls, where the label alone leaves a question.
const HINTS = {
  enqueuedAfter: "A UTC day, included.",
  enqueuedBefore: "A UTC day, not included.",
  decidedAfter: "A UTC day, included.",
  decidedBefore: "A UTC day, not included.",
  externalKeyPrefix: "Case-sensitive.",
};

function controlId(name) {
  return `search-${name}`;
}

function select(id, options, value, extra = {}) {
  const node = h("select", { id, class: "input", ...extra }, options.map(([optionValue, text]) => h("option", { value: optionValue }, text)));
  node.value = value;
  return node;
}

function queuesControl(id, chosen, queues) {
  // A queue named by the address but not listed (another token's, say) stays chosen.
  const names = [...new Set([...queues, ...chosen])].sort();
  return h(
    "select",
    { id, class: "input search-queues", multiple: true, size: String(Math.min(Math.max(names.length, 2), 5)) },
    names.map((name) => h("option", { value: name, selected: chosen.includes(name) }, name)),
  );
}

function statesControl(id, chosen) {
  return h(
    "fieldset",
    { id, class: "search-states" },
    h("legend", { class: "label" }, "States"),
    h(
      "div",
      { class: "search-checks" },
      ITEM_STATES.map((state) =>
        h("label", { class: "search-check" }, h("input", { type: "checkbox", name: "states", value: state, checked: chosen.includes(state) }), words(state)),
      ),
    ),
  );
}

function control(kind, field, value, queues) {
  const id = controlId(field.name);
  switch (field.type) {
    case "queues":
      return queuesControl(id, value, queues);
    case "states":
      return statesControl(id, value);
    case "int":
      return h("input", { id, class: "input", type: "text", inputmode: "numeric", value });
    case "time":
      // A date picker for a day; a time from the address (to the second, with its zone) stays
      // as written.
      return h("input", { id, class: "input", type: !value || isDate(value) ? "date" : "text", value });
    case "verdict":
      return select(id, [["", "Any verdict"], ...VERDICTS.map((v) => [v, verdictWord(v)])], value);
    case "status": {
      // Items match their current decision, which is never superseded (use Overturned);
      // offered only when the address asks for it, so that the refusal shows beside it.
      const statuses = kind === "items" && value !== "SUPERSEDED" ? DECISION_STATUSES.filter((s) => s !== "SUPERSEDED") : DECISION_STATUSES;
      return select(id, [["", "Any status"], ...statuses.map((s) => [s, words(s)])], value);
    }
    case "bool":
      return select(id, [["", "Either"], ["true", "Yes"], ["false", "No"]], value);
    case "order":
      return select(id, ORDERS.map((o) => [o, ORDER_LABELS[kind][o]]), value || "NEWEST_FIRST");
    default:
      return h("input", { id, class: "input", type: "text", value, autocomplete: "off", spellcheck: "false" });
  }
}

/** The form of `kind`'s filters, holding `values` (readParams()); `onSubmit` applies them. */
export function filterForm(kind, values, queues, onSubmit) {
  const fields = fieldsOf(kind).map((field) => {
    const node = control(kind, field, values[field.name], queues);
    const hint = HINTS[field.name] ? h("p", { class: "search-hint", id: `${controlId(field.name)}-hint`, text: HINTS[field.name] }) : null;
    if (hint) node.setAttribute("aria-describedby", hint.id);
    const label = field.type === "states" ? null : h("label", { for: node.id, class: "label" }, field.label);
    return h("div", { class: ["search-field", `search-field-${field.type}`], "data-field": field.name }, label, node, hint);
  });
  return h(
    "form",
    { class: "search-filters", "aria-label": "Filters", onsubmit: onSubmit, novalidate: true },
    h("div", { class: "search-grid" }, fields),
    h(
      "div",
      { class: "search-buttons" },
      h("button", { type: "submit", class: "button button-primary" }, "Apply filters"),
      h("a", { class: "button button-quiet", href: kind === "items" ? "#/search" : "#/search/decisions" }, "Clear filters"),
    ),
  );
}

/** The controls' values, as readParams() gives them. */
export function readForm(kind, root) {
  const values = {};
  for (const field of fieldsOf(kind)) {
    const node = root.querySelector(`#${controlId(field.name)}`);
    if (!node) continue;
    if (field.type === "queues") values[field.name] = [...node.selectedOptions].map((option) => option.value);
    else if (field.type === "states") values[field.name] = [...node.querySelectorAll("input:checked")].map((box) => box.value);
    else values[field.name] = node.value.trim();
  }
  // The default order goes without saying: the address stays short.
  if (values.order === "NEWEST_FIRST") values.order = "";
  return values;
}

/**
 * Marks a field's control: "invalid" (its message beside it, and the control read as
 * invalid) or "narrow" (a filter that would narrow a search too broad). False when no
 * control has that name (a refusal of the cursor, say).
 */
export function markField(root, name, message, how) {
  const field = root.querySelector(`.search-field[data-field="${CSS.escape(name)}"]`);
  const node = field?.querySelector(`#${controlId(name)}`);
  if (!node) return false;
  field.classList.add(how === "invalid" ? "is-invalid" : "is-suggested");
  const note = h("p", { class: how === "invalid" ? "search-problem" : "search-suggestion", id: `${node.id}-${how}`, text: message });
  field.append(note);
  const described = [node.getAttribute("aria-describedby"), note.id].filter(Boolean).join(" ");
  node.setAttribute("aria-describedby", described);
  if (how === "invalid" && node.tagName !== "FIELDSET") node.setAttribute("aria-invalid", "true");
  return true;
}
