// One page of a search's results as a table: items (each with its current decision) or
// decisions (each with its item). Each row carries its record's id (data-row), so that
// what is shown can be checked against the API.

import { statusBadge } from "./decisions.js";
import { badge, h, wide } from "./dom.js";
import { preciseWhen, relative, verdictDone, when, words } from "./format.js";

const STATE_TONES = { PENDING: "info", LEASED: "warning", DECIDED: "success", PARKED: "neutral" };
const VERDICT_TONES = { APPROVE: "approve", REJECT: "reject", ESCALATE: "escalate" };

function time(iso, { ago = false } = {}) {
  if (!iso) return h("span", { class: "muted", text: "–" });
  return h("time", { datetime: iso, title: preciseWhen(iso), text: ago ? relative(iso) : when(iso) });
}

function itemLink(id, text = id) {
  return h("a", { href: `#/item/${encodeURIComponent(id)}`, text });
}

/** The verdict's badge, an overturn's, and (`provisional`) whether it awaits a second review. */
function verdict(decision, { provisional = false } = {}) {
  return h(
    "span",
    { class: "search-verdict" },
    badge(verdictDone(decision.verdict), VERDICT_TONES[decision.verdict] ?? "neutral"),
    decision.isOverturn ? badge("Overturn", "warning") : null,
    provisional && decision.status === "PROVISIONAL" ? badge("Provisional", "warning") : null,
  );
}

/** The decision the search's filters read: the latest not superseded. */
function currentDecision(item) {
  return item.decisions.findLast((decision) => decision.status !== "SUPERSEDED") ?? null;
}

function columns(names) {
  return h("thead", {}, h("tr", {}, names.map(([text, className]) => h("th", { scope: "col", class: className, text }))));
}

function itemMarks(item) {
  return [
    item.hold ? badge("Held", "neutral", `Until ${preciseWhen(item.hold.until)}`) : null,
    item.overdue ? badge("Overdue", "alert") : null,
    item.assignment ? h("div", { class: "muted small", text: `assigned to ${item.assignment.reviewer}` }) : null,
  ];
}

export function itemTable(items) {
  return wide(
    h(
      "table",
      { class: "data search-table", "aria-label": "Items found" },
      columns([["Id"], ["Queue"], ["External key"], ["State"], ["Priority", "num"], ["Enqueued"], ["Last activity"], ["Current decision"]]),
      h(
        "tbody",
        {},
        items.map((item) => {
          const decision = currentDecision(item);
          return h(
            "tr",
            { "data-row": item.id },
            h("td", {}, itemLink(item.id)),
            h("td", { text: item.queue }),
            h("td", { class: "search-key" }, h("code", { text: item.externalKey })),
            h("td", {}, h("div", { class: "search-marks" }, badge(words(item.state), STATE_TONES[item.state] ?? "neutral"), itemMarks(item))),
            h("td", { class: "num", text: String(item.priority) }),
            h("td", {}, time(item.createdAt)),
            h("td", {}, time(item.updatedAt, { ago: true })),
            h(
              "td",
              { class: "search-decision" },
              decision
                ? [
                    verdict(decision, { provisional: true }),
                    h("div", {}, h("code", { text: decision.reasonCode })),
                    h("div", { class: "muted small" }, `by ${decision.reviewer}, `, time(decision.decidedAt, { ago: true })),
                  ]
                : h("span", { class: "muted", text: "None yet" }),
            ),
          );
        }),
      ),
    ),
  );
}

export function decisionTable(decisions) {
  return wide(
    h(
      "table",
      { class: "data search-table", "aria-label": "Decisions found" },
      columns([["Id"], ["Item"], ["Queue"], ["Verdict"], ["Reason"], ["Reviewer"], ["Decided"], ["Status"]]),
      h(
        "tbody",
        {},
        decisions.map((decision) =>
          h(
            "tr",
            { "data-row": decision.id },
            h("td", { text: decision.id }),
            h(
              "td",
              { class: "search-key" },
              decision.item
                ? [itemLink(decision.item.id, decision.item.externalKey), h("div", { class: "muted small", text: `item ${decision.item.id}` })]
                : h("span", { class: "muted", text: "Now outside your queues" }),
            ),
            h("td", { text: decision.queue }),
            h("td", {}, verdict(decision)),
            h("td", {}, h("code", { text: decision.reasonCode })),
            h("td", { text: decision.reviewer }),
            h("td", {}, time(decision.decidedAt)),
            h("td", {}, statusBadge(decision)),
          ),
        ),
      ),
    ),
  );
}
