// The shared form of a search in an address: one parameter per GraphQL input field, named
// as the field (camelCase), lists repeated (queues=kyc&queues=payouts), enums by their
// GraphQL names, booleans true/false, times in ISO 8601 or a date (midnight UTC). The
// console's results page (#/search?…, #/search/decisions?…), the CSV routes and the docs
// read the same parameters; the console adds `q` (what was typed in the search box) and
// `after` (the cursors of the pages before this one, oldest first).

export const ITEM_STATES = ["PENDING", "LEASED", "DECIDED", "PARKED"];
export const VERDICTS = ["APPROVE", "REJECT", "ESCALATE"];
export const DECISION_STATUSES = ["PROVISIONAL", "EFFECTIVE", "SUPERSEDED"];
export const ORDERS = ["NEWEST_FIRST", "OLDEST_FIRST"];

// Each filter: its parameter (= the GraphQL field), its kind, and how the page labels it.
const ITEM_FIELDS = [
  ["queues", "queues", "Queues"],
  ["states", "states", "States"],
  ["externalKeyPrefix", "text", "External key starts with"],
  ["subjectRef", "text", "Subject reference"],
  ["priorityAtLeast", "int", "Priority at least"],
  ["priorityAtMost", "int", "Priority at most"],
  ["enqueuedAfter", "time", "Enqueued from"],
  ["enqueuedBefore", "time", "Enqueued before"],
  ["decidedAfter", "time", "Decided from"],
  ["decidedBefore", "time", "Decided before"],
  ["decidedBy", "text", "Decided by"],
  ["verdict", "verdict", "Verdict"],
  ["reasonCode", "text", "Reason code"],
  ["decisionStatus", "status", "Decision status"],
  ["overturned", "bool", "Overturned"],
  ["assignedTo", "text", "Assigned to"],
  ["held", "bool", "Held"],
  ["overdue", "bool", "Overdue"],
  ["hasNotes", "bool", "Has notes"],
  ["order", "order", "Order"],
];

const DECISION_FIELDS = [
  ["queues", "queues", "Queues"],
  ["reviewer", "text", "Reviewer"],
  ["verdict", "verdict", "Verdict"],
  ["reasonCode", "text", "Reason code"],
  ["decidedAfter", "time", "Decided from"],
  ["decidedBefore", "time", "Decided before"],
  ["status", "status", "Status"],
  ["order", "order", "Order"],
];

export const KINDS = {
  items: { fields: ITEM_FIELDS, hash: "#/search", csv: "/export/items.csv", noun: "item" },
  decisions: { fields: DECISION_FIELDS, hash: "#/search/decisions", csv: "/export/decisions.csv", noun: "decision" },
};

const DATE = /^\d{4}-\d{2}-\d{2}$/;
// A time, UTC unless it names its offset (as the CSV routes read it too).
const TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?$/;
const LISTS = new Set(["queues", "states"]);

export function fieldsOf(kind) {
  return KINDS[kind].fields.map(([name, type, label]) => ({ name, type, label }));
}

export function isDate(text) {
  return DATE.test(text);
}

/** What the address says, as the controls hold it: lists as arrays, the rest as text
 *  ("" for none). Unknown parameters are left out. */
export function readParams(kind, query) {
  const params = new URLSearchParams(query || "");
  const values = {};
  for (const { name, type } of fieldsOf(kind)) {
    values[name] = LISTS.has(type) ? params.getAll(name).filter(Boolean) : (params.get(name) ?? "").trim();
  }
  return { values, q: params.get("q") ?? "", after: params.getAll("after").filter(Boolean) };
}

/** The address of a search: its filters (none left empty), then `q`, then the cursors. */
export function searchHash(kind, values, { q = "", after = [] } = {}) {
  const text = queryString(kind, values, { q, after });
  return text ? `${KINDS[kind].hash}?${text}` : KINDS[kind].hash;
}

/** The filters alone, in the shared form (what the CSV route takes). */
export function queryString(kind, values, { q = "", after = [] } = {}) {
  const params = new URLSearchParams();
  for (const { name, type } of fieldsOf(kind)) {
    const value = values[name];
    if (LISTS.has(type)) for (const one of value ?? []) params.append(name, one);
    else if (value) params.set(name, value);
  }
  if (q) params.set("q", q);
  for (const cursor of after) params.append("after", cursor);
  return params.toString();
}

/** A date as its midnight, a time as written with its offset (Z when it gives none). */
function isoTime(value) {
  if (DATE.test(value)) return `${value}T00:00:00Z`;
  const time = value.replace(" ", "T");
  return /(Z|[+-]\d{2}:\d{2})$/.test(time) ? time : `${time}Z`;
}

function problem(type, value, label) {
  switch (type) {
    case "int":
      return /^-?\d+$/.test(value) ? null : `${label}: write a whole number.`;
    case "time":
      return DATE.test(value) || (TIME.test(value) && !Number.isNaN(Date.parse(isoTime(value))))
        ? null
        : `${label}: write a date (2026-10-01) or a time (2026-10-01T09:30:00Z).`;
    case "bool":
      return ["true", "false"].includes(value) ? null : `${label}: true or false.`;
    case "verdict":
      return VERDICTS.includes(value) ? null : `${label}: one of ${VERDICTS.join(", ")}.`;
    case "status":
      return DECISION_STATUSES.includes(value) ? null : `${label}: one of ${DECISION_STATUSES.join(", ")}.`;
    case "order":
      return ORDERS.includes(value) ? null : `${label}: one of ${ORDERS.join(", ")}.`;
    case "states": {
      const unknown = value.filter((state) => !ITEM_STATES.includes(state));
      return unknown.length ? `${label}: ${unknown.join(", ")} is not a state (${ITEM_STATES.join(", ")}).` : null;
    }
    default:
      return null;
  }
}

/**
 * The GraphQL filter of the controls' values, or the problems that keep it from being
 * sent: { filter } or { problems: {field: message} }. A date is its day's midnight, UTC.
 */
export function toFilter(kind, values) {
  const filter = {};
  const problems = {};
  for (const { name, type, label } of fieldsOf(kind)) {
    const value = values[name];
    if (LISTS.has(type) ? !value?.length : !value) continue;
    const wrong = problem(type, value, label);
    if (wrong) {
      problems[name] = wrong;
      continue;
    }
    if (type === "int") filter[name] = Number.parseInt(value, 10);
    else if (type === "bool") filter[name] = value === "true";
    else if (type === "time") filter[name] = isoTime(value);
    else filter[name] = value;
  }
  return Object.keys(problems).length ? { problems } : { filter };
}

// Filters that mean the same on both kinds of search, by their names on each.
const SHARED = [
  ["queues", "queues"],
  ["verdict", "verdict"],
  ["reasonCode", "reasonCode"],
  ["decidedAfter", "decidedAfter"],
  ["decidedBefore", "decidedBefore"],
  ["decidedBy", "reviewer"],
  ["decisionStatus", "status"],
  ["order", "order"],
];

/** The other kind's search with the filters the two share: from items to decisions and back. */
export function switchKind(from, values) {
  const to = from === "items" ? "decisions" : "items";
  const carried = {};
  for (const [itemName, decisionName] of SHARED) {
    const [source, target] = from === "items" ? [itemName, decisionName] : [decisionName, itemName];
    carried[target] = values[source];
  }
  // A current decision is never superseded: the items' search refuses that status.
  if (to === "items" && carried.decisionStatus === "SUPERSEDED") carried.decisionStatus = "";
  return searchHash(to, carried);
}
