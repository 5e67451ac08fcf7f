// Decisions as a person reads them, wherever the console lists them: the verdict, the
// reason (its label when the catalogue is known), the note, who decided and when, the
// evidence it was made on, its status (provisional, effective, superseded; who confirmed
// it) and a QA check's result. Notes are strangers' text: always set as text.

import { call } from "./api.js";
import { badge, facts, h } from "./dom.js";
import { preciseWhen, shortHash, verdictDone, when } from "./format.js";
import * as ops from "./operations.js";

// Decision.status, in words and a tone.
const STATUS = {
  PROVISIONAL: { text: "Provisional", long: "Provisional: awaiting second review", tone: "warning" },
  EFFECTIVE: { text: "Effective", long: "Effective", tone: "success" },
  SUPERSEDED: { text: "Superseded", long: "Superseded", tone: "neutral" },
};

export function statusWords(decision) {
  const status = STATUS[decision.status];
  if (!status) return null;
  return decision.status === "EFFECTIVE" && decision.confirmedBy ? `Effective, confirmed by ${decision.confirmedBy}` : status.long;
}

/** The status badge: "Provisional: awaiting second review", "Effective, confirmed by bob",
 *  "Superseded"; data-status holds the API's value. */
export function statusBadge(decision) {
  const status = STATUS[decision.status];
  if (!status) return null;
  const title = decision.confirmedAt ? `Confirmed ${preciseWhen(decision.confirmedAt)}` : undefined;
  const node = badge(statusWords(decision), status.tone, title);
  node.dataset.status = decision.status;
  node.classList.add("decision-status");
  return node;
}

/** "QA: agreed (bob, documents_checked)" beside a sampled decision; null when none. */
export function qaBadge(decision, labels = new Map()) {
  const qa = decision.qaResult;
  if (!qa) return decision.sampledForQa ? badge("Sampled for QA: not checked yet", "info") : null;
  const reason = labels.get(qa.reasonCode) ?? qa.reasonCode;
  const node = badge(`QA: ${qa.agrees ? "agreed" : "disagreed"} (${qa.reviewer}, ${reason})`, qa.agrees ? "success" : "alert", `Checked ${preciseWhen(qa.recordedAt)}`);
  node.dataset.qa = qa.agrees ? "agreed" : "disagreed";
  node.classList.add("decision-qa");
  return node;
}

/** As reasonText(), the code set as code. */
function reasonNode(code, labels) {
  const label = labels?.get(code);
  const codeNode = h("code", { class: "decision-code", text: code });
  return h("span", { class: "decision-reason" }, label ? [label, " (", codeNode, ")"] : codeNode);
}

/** A reason as "Label (code)", or the code alone when its label is not known. */
export function reasonText(code, labels) {
  const label = labels?.get(code);
  return label ? `${label} (${code})` : code;
}

// Reason catalogues by queue, read once per page load; a queue the token does not cover
// gives none (the codes are shown alone).
const catalogues = new Map();

function readQueue(queue) {
  if (!catalogues.has(queue)) {
    const read = call(ops.REASON_CODES, { name: queue })
      .then((data) => data.queue ?? { reasonCodes: [], qaQueue: null })
      .catch(() => {
        catalogues.delete(queue);
        return { reasonCodes: [], qaQueue: null };
      });
    catalogues.set(queue, read);
  }
  return catalogues.get(queue);
}

/** The reason catalogue of a queue ({code, label, verdicts, requiresNote}); [] if unknown. */
export async function reasonCatalogue(queue) {
  return (await readQueue(queue)).reasonCodes;
}

/** The labels the decisions of `queues` need: `reasons` of their own catalogues, and `qa`
 *  of their QA queues' catalogues (a QA result's reason is one of those). */
export async function decisionLabels(queues) {
  const read = await Promise.all([...new Set(queues)].map(readQueue));
  const qaQueues = [...new Set(read.map((q) => q.qaQueue).filter(Boolean))];
  const qaRead = await Promise.all(qaQueues.map(readQueue));
  const labels = (found) => new Map(found.flatMap((q) => q.reasonCodes).map((r) => [r.code, r.label]));
  return { reasons: labels(read), qa: labels(qaRead) };
}

/**
 * One decision in full, for a second reviewer or a QA reviewer to judge: verdict, reason,
 * note, decider and time, the evidence hash it was made on beside `currentHash` (the hash
 * of the item as it is now), its status and its QA result.
 */
export function decisionSummary(decision, { labels, qaLabels = new Map(), currentHash, title }) {
  const matches = currentHash ? decision.evidenceHash === currentHash : null;
  return h(
    "section",
    { class: ["card", "decision-summary", `decision-summary-${decision.verdict.toLowerCase()}`], "aria-label": title, "data-decision": decision.id },
    // Above the item's card (whose key is an h2), the first thing under the page's h1.
    h("h2", { class: "card-title" }, title),
    h(
      "div",
      { class: "decision-head" },
      h("span", { class: `decision-verdict verdict-${decision.verdict.toLowerCase()}`, "data-fact": "verdict", text: verdictDone(decision.verdict) }),
      statusBadge(decision),
      qaBadge(decision, qaLabels),
    ),
    facts([
      ["Reason", reasonText(decision.reasonCode, labels), { "data-fact": "reason", class: "fact fact-wide" }],
      decision.item ? ["On item", h("a", { href: `#/item/${encodeURIComponent(decision.item.id)}`, title: "The item's own page: its activity and decisions", text: decision.item.externalKey }), { "data-fact": "item" }] : null,
      ["Decided by", decision.reviewer, { "data-fact": "reviewer" }],
      ["When", h("time", { datetime: decision.decidedAt, title: preciseWhen(decision.decidedAt), text: when(decision.decidedAt) }), { "data-fact": "decidedAt" }],
      [
        "Made on evidence",
        h(
          "span",
          {},
          h("code", { class: "hash", title: decision.evidenceHash, text: shortHash(decision.evidenceHash) }),
          matches === null ? null : " ",
          matches === null ? null : matches ? badge("Matches the item now", "success") : badge("Differs from the item now", "alert"),
        ),
        { "data-fact": "evidenceHash", "data-value": decision.evidenceHash, "data-matches": matches === null ? undefined : String(matches), class: "fact fact-wide" },
      ],
    ]),
    matches === false
      ? h(
          "p",
          { class: "notice notice-warning", "data-fact": "evidenceWarning" },
          `The item was uploaded again after this decision: its evidence is now ${shortHash(currentHash)}. The decision was made on other evidence than you see.`,
        )
      : null,
    h("h3", { class: "label" }, "Note"),
    decision.note
      ? h("p", { class: "decision-note", "data-fact": "note", text: decision.note })
      : h("p", { class: "muted", "data-fact": "note" }, "No note."),
  );
}

/** Every decision on an item, oldest first, each with its status and QA result;
 *  `labels` as decisionLabels() gives them. */
export function decisionList(decisions, { reasons: labels, qa: qaLabels }) {
  if (!decisions.length) return h("p", { class: "muted" }, "No decision yet.");
  return h(
    "ol",
    { class: "decision-list", "aria-label": "Decisions" },
    decisions.map((d) =>
      h(
        "li",
        { class: "decision-entry", "data-decision": d.id, "data-status": d.status ?? undefined },
        h(
          "p",
          { class: "decision-line" },
          h("strong", { text: d.reviewer }),
          ` ${d.isOverturn ? "overturned it: now " : ""}${verdictDone(d.verdict).toLowerCase()} — `,
          reasonNode(d.reasonCode, labels),
        ),
        h("p", { class: "decision-badges" }, statusBadge(d), qaBadge(d, qaLabels)),
        d.note ? h("p", { class: "timeline-note", text: d.note }) : null,
        d.qaResult?.note ? h("p", { class: "timeline-note decision-qa-note" }, h("span", { class: "muted", text: `QA note (${d.qaResult.reviewer}): ` }), d.qaResult.note) : null,
        h(
          "p",
          { class: "timeline-meta" },
          h("time", { datetime: d.decidedAt, title: preciseWhen(d.decidedAt), text: when(d.decidedAt) }),
          ` · in ${d.queue}`,
        ),
      ),
    ),
  );
}
