// Every typed refusal of the API in words, with what to do next. The server's own message
// is kept as the detail: it names the queue, the code or the state.

import { refusalNotice } from "./dom.js";
import { verdictWord, words } from "./format.js";

// What was being done when a refusal came: a second review (confirm or override) or a QA
// check reads some refusals differently from a first decision.
const SECOND_REVIEW = "secondReview";
const QA_CHECK = "qa";
export const CONTEXTS = { SECOND_REVIEW, QA_CHECK };

/** Refusals of a second review or a QA check, where they differ from a decision's. */
function explainCheck(result, context) {
  const detail = result.message ?? "";
  const doing = context === SECOND_REVIEW ? "second review" : "QA check";
  switch (result.__typename) {
    case "NotPermitted":
      return {
        title: context === SECOND_REVIEW
          ? "Refused: you made the first decision, so you may not give its second review."
          : "Refused: this is your own decision, so you may not check it.",
        detail,
        next: context === SECOND_REVIEW
          ? "Four eyes: another reviewer must confirm or override it. Release the lease so that one of them can claim it. Nothing was written."
          : "A QA check needs another person. Release the lease so that a colleague can claim it. Nothing was written.",
      };
    case "EvidenceChanged":
      return {
        title: context === SECOND_REVIEW
          ? "The evidence changed since the first decision, so nothing was recorded."
          : "The evidence changed since the decision under check, so nothing was recorded.",
        detail: result.currentEvidenceHash ? `${detail} The item's evidence is now ${result.currentEvidenceHash}.`.trim() : detail,
        next: context === SECOND_REVIEW
          ? "A confirmation stands only on the evidence the first decision was made on. Read the item as it is now and override the decision with your own verdict and reason, or release it."
          : "Release the item and tell a manager; its Activity shows the new upload.",
      };
    case "StaleLease":
      return {
        title: `Your lease on this item had ended, so your ${doing} was not recorded.`,
        detail,
        next: "The item went back to its queue or to another reviewer. Claim the next item (n).",
      };
    case "InvalidReasonCode":
      return {
        title: result.verdict
          ? `The reason “${result.code}” is not valid for ${verdictWord(result.verdict).toLowerCase()} in the original queue.`
          : `The reason “${result.code}” is not one of this queue's reasons.`,
        detail,
        next: "Choose one of the reasons offered, then send again; the lease is still yours.",
      };
    default:
      return null;
  }
}

/** {title, detail, next} for a result union member that is not a success; `context` is
 *  CONTEXTS.SECOND_REVIEW or CONTEXTS.QA_CHECK for the refusals of those. */
export function explain(result, context = null) {
  const detail = result.message ?? "";
  const checked = context ? explainCheck(result, context) : null;
  if (checked) return checked;
  switch (result.__typename) {
    case "StaleLease":
      return result.decidedUnderThisLease
        ? {
            title: "You already recorded a different verdict under this lease.",
            detail,
            next: "Nothing new was written. Your first verdict stands; an approver can overturn it if it was wrong.",
          }
        : {
            title: "Your lease on this item had ended, so nothing was recorded.",
            detail,
            next: "The item went back to the queue or to another reviewer. Claim the next item (n).",
          };
    case "EvidenceChanged":
      return {
        title: "The evidence changed after you claimed this item, so nothing was recorded.",
        detail,
        next: "Release it and claim again to review the new evidence.",
      };
    case "InvalidReasonCode":
      return {
        title: `The reason “${result.code}” is not valid for ${verdictWord(result.verdict).toLowerCase()} in this queue.`,
        detail,
        next: "Choose one of the reasons offered for this verdict, then submit again.",
      };
    case "NotPermitted":
      if (detail.startsWith("four-eyes")) {
        return {
          title: "Refused: you submitted this correction, so you may not approve it.",
          detail,
          next: "Four eyes: another approver must approve it. Release the lease so that one of them can claim it.",
        };
      }
      return {
        title: "Refused: your token may not do this.",
        detail,
        next: "Ask an admin for a token with the right role and queues.",
      };
    case "InvalidTransition":
      return {
        title: `Not possible now: the exception is ${words(result.state).toLowerCase()}.`,
        detail,
        next: result.allowedActions?.length
          ? `Allowed now: ${result.allowedActions.map((a) => words(a).toLowerCase()).join(", ")}. The page shows the current state.`
          : "Nothing more can be done with it now.",
      };
    case "InvalidInput":
      return {
        title: result.field ? `Check “${words(result.field)}”.` : "Some input was not accepted.",
        detail,
        next: "Correct it and submit again; nothing was written.",
      };
    case "NotFound":
      return {
        title: "Not found: there is no such item that your token covers.",
        detail,
        next: "Nothing was written. Check the address, or ask for a token that covers its queue.",
      };
    case "LeaseLimitReached":
      return {
        title: `You hold ${result.limit} lease${result.limit === 1 ? "" : "s"} here already: the most this queue allows.`,
        detail,
        next: "Take one of them up again below (decide, hold or release it) before claiming more.",
      };
    case "InvalidHoldReason":
      return {
        title: `“${result.code}” is not a hold reason of this queue.`,
        detail,
        next: "Choose one of the reasons offered, then hold again; the lease is still yours.",
      };
    case "ItemNotWaiting":
      return {
        title: `Not possible now: the item is ${words(result.state).toLowerCase()}.`,
        detail,
        next: "Nothing was written. The page shows where it stands now.",
      };
    case "NotAssigned":
      return { title: "The item is not assigned to anyone.", detail, next: "Nothing was written; the page shows it as it is now." };
    case "NotLeased":
      return { title: "Nobody holds a lease on this item now.", detail, next: "Nothing was written: the lease ended before the revocation arrived." };
    case "NotHeld":
      return { title: "The item is not on hold.", detail, next: "Nothing was written: its hold ended already, or it was never held." };
    case "QueueEmpty":
      return { title: "Nothing to claim right now.", detail, next: "The figures update live; try again when the backlog grows." };
    case "AlreadyQueued":
      return { title: "This version's redrive was requested already.", detail, next: "Its key and status are below." };
    default:
      return { title: "The server refused this.", detail, next: "" };
  }
}

/** A refused result as a notice on the page. */
export function refusalBox(result, context) {
  return refusalNotice(explain(result, context));
}
