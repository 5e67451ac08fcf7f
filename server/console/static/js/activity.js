// An item's Activity: its timeline (ReviewItem.events) in plain words, oldest first, and
// the Add note box. Oldest first because the API pages forward in time: "Show more"
// continues the story where the page stopped, and the note box sits where the next entry
// will appear. Notes are strangers' text: always set as text, never parsed as markup.

import { ApiError, call } from "./api.js";
import { qaBadge, statusBadge } from "./decisions.js";
import { errorBox, fill, h, spinner } from "./dom.js";
import { clock, preciseWhen, verdictDone, when, words } from "./format.js";
import * as live from "./live.js";
import * as ops from "./operations.js";
import { explain } from "./refusals.js";

// After a live update the page reads its entries again from the start, as far as it had
// shown; a story longer than this many pages stops there and offers "Show more".
const MAX_PAGES_PER_READ = 10;
// The API's limit on a note's length (server/domain/text.py MAX_TEXT).
const NOTE_MAX_LENGTH = 4000;

// The entries that record a decision, beside which its status and QA result are shown.
const DECISION_KINDS = new Set(["DECIDED", "OVERTURNED", "ESCALATED", "SECOND_REVIEW", "OVERRIDDEN"]);

// A notification to the owners (NOTIFIED): what it told of, and how its sending went.
const NOTICE_WORDS = {
  OVERDUE: "is overdue",
  ESCALATED: "was escalated",
  UNCLAIMED: "waits unclaimed",
  NEEDS_APPROVAL: "needs an approval",
  APPLICATION_FAILED: "could not be carried out",
};
const NOTICE_STATE_WORDS = { PENDING: "not sent yet", SENT: "sent", FAILED: "could not be sent" };

/** What happened, as a sentence whose subject is the actor (a strong element). */
function sentence(event) {
  const who = h("strong", { class: "activity-actor", text: event.actor });
  const decision = event.decision;
  const code = decision ? h("code", { class: "activity-code", text: decision.reasonCode }) : null;
  switch (event.kind) {
    case "ENQUEUED":
      return [who, " enqueued it"];
    case "REUPLOADED":
      return [who, " sent it again with new evidence"];
    case "CLAIMED":
      return [who, " claimed it"];
    case "RENEWED":
      return [who, event.until ? ` renewed the lease, until ${clock(event.until)}` : " renewed the lease"];
    case "RELEASED":
      return [who, " released it"];
    case "LAPSED":
      return ["Lease ran out (", who, ")"];
    case "REVOKED":
      return [who, event.lease ? ` revoked ${event.lease.owner}’s lease` : " revoked the lease", event.body ? `: ${event.body}` : ""];
    case "ESCALATED":
      if (decision) return [who, ` escalated it to ${event.toQueue} — `, code];
      return [`Moved to ${event.toQueue}: its leases ran out too many times (found by `, who, ")"];
    case "MOVED":
      return [who, ` moved it from ${event.fromQueue} to ${event.toQueue}`];
    case "HELD":
      return [who, " held it", event.holdReason ? [": ", h("code", { class: "activity-code", text: event.holdReason })] : "", event.until ? `, until ${when(event.until)}` : ""];
    case "RESUMED":
      return [who, " ended the hold", event.holdReason ? [" (", h("code", { class: "activity-code", text: event.holdReason }), ")"] : ""];
    case "ASSIGNED":
      return [who, event.assignee ? ` assigned it to ${event.assignee}` : " assigned it", event.until ? ` until ${when(event.until)}` : ""];
    case "UNASSIGNED":
      return [who, event.assignee ? ` ended ${event.assignee}’s assignment` : " ended the assignment"];
    case "NOTED":
      return [who, " added a note:"];
    case "DECIDED":
      return [who, ` ${verdictDone(decision?.verdict).toLowerCase()} — `, code];
    case "OVERTURNED":
      return [who, ` overturned the decision: now ${verdictDone(decision?.verdict).toLowerCase()} — `, code];
    case "SECOND_REVIEW":
      return [who, ` ${verdictDone(decision?.verdict).toLowerCase()} — `, code, `, provisionally: sent to ${event.toQueue ?? "its second-review queue"} for a second review`];
    case "CONFIRMED":
      return [who, decision ? ` confirmed ${decision.reviewer}’s decision (${verdictDone(decision.verdict).toLowerCase()} — ` : " confirmed the decision", decision ? [code, "): it takes effect"] : ""];
    case "OVERRIDDEN":
      return [who, ` overrode the first decision: now ${verdictDone(decision?.verdict).toLowerCase()} — `, code];
    case "QA_SAMPLED":
      return [`Sampled for QA: ${decision ? `the ${verdictDone(decision.verdict).toLowerCase()} decision` : "the decision"} was copied to ${event.toQueue ?? "the QA queue"} (`, who, ")"];
    case "QA_CHECKED": {
      const qa = decision?.qaResult;
      if (!qa) return [who, " checked the decision for QA"];
      return [who, ` checked the decision for QA: ${qa.agrees ? "agrees" : "disagrees"} — `, h("code", { class: "activity-code", text: qa.reasonCode })];
    }
    case "NOTIFIED":
      return [who, ` told ${event.notificationChannel} that it ${NOTICE_WORDS[event.notificationEvent] ?? "waits"} (rule ${event.notificationRule}): ${NOTICE_STATE_WORDS[event.notificationState] ?? words(event.notificationState ?? "").toLowerCase()}`, event.notificationSentAt ? ` ${when(event.notificationSentAt)}` : ""];
    default:
      return [who, `: ${words(event.kind).toLowerCase()}`];
  }
}

function tone(event) {
  if (["DECIDED", "OVERTURNED", "SECOND_REVIEW", "CONFIRMED", "OVERRIDDEN"].includes(event.kind)) return event.decision?.verdict.toLowerCase();
  if (event.kind === "QA_CHECKED") return event.decision?.qaResult?.agrees === false ? "reject" : "approve";
  return { ESCALATED: "escalate", LAPSED: "lapsed", REVOKED: "lapsed", NOTED: "note", HELD: "held" }[event.kind] ?? null;
}

function entry(edge, { queue, fresh }) {
  const event = edge.node;
  const meta = [words(event.actorRole), h("time", { datetime: event.at, title: preciseWhen(event.at), text: when(event.at) })];
  // The queue is worth saying only where the item was somewhere else then.
  if (queue && event.queue !== queue) meta.push(`in ${event.queue}`);
  return h(
    "li",
    {
      class: ["timeline-entry", "activity-entry", fresh && "is-new"],
      "data-kind": event.kind,
      "data-tone": tone(event),
      tabindex: "-1",
    },
    h("p", { class: "activity-what" }, sentence(event)),
    // A decision's standing now (provisional, effective and who confirmed it, superseded)
    // and a QA check's result, beside the entry that made it.
    event.decision && DECISION_KINDS.has(event.kind)
      ? h("p", { class: "decision-badges" }, statusBadge(event.decision), qaBadge(event.decision))
      : null,
    event.body && event.kind !== "REVOKED" ? h("p", { class: ["timeline-note", event.kind === "NOTED" && "activity-note"], text: event.body }) : null,
    h("p", { class: "timeline-meta" }, meta.flatMap((part, index) => (index ? [" · ", part] : [part]))),
  );
}

/**
 * The Activity section of one item. `queue` is the item's queue as shown (events elsewhere
 * say where they happened); `canNote` false leaves the note box out. `onUpdate(update)`
 * gets each itemUpdates message, so the page around it can follow the item too, and
 * `onResync()` runs after the socket came back. Returns {node, reread, dispose}.
 */
export function activityPanel(itemId, { queue = null, canNote = true, onUpdate = () => {}, onResync = () => {} } = {}) {
  const scope = new live.Scope();
  let edges = [];
  let endCursor = null;
  let hasNextPage = false;
  let loaded = false;
  let chain = Promise.resolve();
  let rereadQueued = false;

  const list = h("ol", { class: "timeline activity-list", "aria-label": "Activity entries" });
  const problem = h("div", { class: "activity-problem" });
  const more = h("button", { type: "button", class: "button button-quiet activity-more", hidden: true }, "Show more");
  const announcer = h("div", { class: "visually-hidden", "aria-live": "polite" });
  const headingId = `activity-${itemId}`;
  fill(list, h("li", {}, spinner("Reading the item’s activity")));

  async function readPage(after) {
    const data = await call(ops.ITEM_EVENTS, { id: itemId, after });
    if (!data.item) throw new ApiError("This item is not one your token covers any more.", "NOT_FOUND");
    return data.item.events;
  }

  function render(freshCursors = new Set()) {
    fill(
      list,
      edges.length
        ? edges.map((edge) => entry(edge, { queue, fresh: freshCursors.has(edge.cursor) }))
        : h("li", { class: "muted activity-empty" }, "Nothing recorded yet."),
    );
    more.hidden = !hasNextPage;
  }

  // From the start again, as far as the page had shown (to the end when it had shown the
  // end): a new event may sort before the last one shown, so appending could miss it.
  async function reread({ toEnd = false, announce = false } = {}) {
    const wanted = edges.length;
    const throughEnd = toEnd || (loaded && !hasNextPage);
    const known = new Set(edges.map((edge) => edge.cursor));
    const read = [];
    let after = null;
    let page;
    let pages = 0;
    do {
      page = await readPage(after);
      read.push(...page.edges);
      after = page.pageInfo.endCursor ?? after;
      pages += 1;
    } while (page.pageInfo.hasNextPage && (read.length < wanted || throughEnd) && pages < MAX_PAGES_PER_READ);
    const fresh = loaded ? new Set(read.map((edge) => edge.cursor).filter((cursor) => !known.has(cursor))) : new Set();
    edges = read;
    endCursor = after;
    hasNextPage = page.pageInfo.hasNextPage;
    loaded = true;
    render(fresh);
    if (announce && fresh.size) {
      const said = [...list.querySelectorAll(".is-new .activity-what")].map((node) => node.textContent);
      fill(announcer, `New activity: ${said.join("; ")}`);
    }
  }

  async function showMore() {
    const page = await readPage(endCursor);
    const first = page.edges[0]?.cursor;
    edges = edges.concat(page.edges);
    endCursor = page.pageInfo.endCursor ?? endCursor;
    hasNextPage = page.pageInfo.hasNextPage;
    render();
    // Where the reader's eyes (and focus) should go: the first entry just read.
    const index = edges.findIndex((edge) => edge.cursor === first);
    if (index >= 0) list.children[index]?.focus();
  }

  /** Runs reads one after another; rereads asked for while one waits are one reread. */
  function schedule(task, { coalesce = false } = {}) {
    if (coalesce) {
      if (rereadQueued) return chain;
      rereadQueued = true;
    }
    chain = chain
      .then(async () => {
        if (coalesce) rereadQueued = false;
        await task();
        fill(problem);
      })
      .catch((error) => {
        fill(problem, errorBox("The activity could not be read.", error.message));
      });
    return chain;
  }

  const liveReread = () => schedule(() => reread({ announce: true }), { coalesce: true });

  more.addEventListener("click", async () => {
    more.disabled = true;
    await schedule(showMore);
    more.disabled = false;
  });

  const section = h(
    "section",
    { class: "card activity", "aria-labelledby": headingId },
    h("h3", { class: "card-title", id: headingId }, "Activity"),
    list,
    more,
    problem,
    announcer,
    canNote ? noteForm(itemId, () => schedule(() => reread({ toEnd: true }), { coalesce: true })) : null,
  );

  scope.subscribe(
    ops.ITEM_UPDATES,
    { itemId },
    (data) => {
      liveReread();
      onUpdate(data.itemUpdates);
    },
    () => liveReread(),
  );
  scope.onResync(() => {
    liveReread();
    onResync();
  });
  schedule(() => reread());

  return {
    node: section,
    reread: liveReread,
    dispose: () => scope.dispose(),
  };
}

/** The Add note box: anyone whose token covers the queue may note, lease or not. */
function noteForm(itemId, onAdded) {
  const fieldId = `add-note-${itemId}`;
  const hintId = `${fieldId}-hint`;
  const box = h("textarea", {
    id: fieldId,
    class: "input",
    name: "note",
    rows: 3,
    maxlength: NOTE_MAX_LENGTH,
    "aria-describedby": hintId,
    placeholder: "What a colleague should know about this item",
  });
  const button = h("button", { type: "submit", class: "button" }, "Add note");
  const outcome = h("div", { class: "note-outcome", "aria-live": "polite" });
  let sending = false;

  async function send() {
    if (sending) return;
    sending = true;
    button.disabled = true;
    fill(outcome);
    box.removeAttribute("aria-invalid");
    try {
      const result = (await call(ops.ADD_NOTE, { input: { itemId, body: box.value } })).addNote;
      if (result.__typename === "NoteAdded") {
        box.value = "";
        fill(outcome, h("p", { class: "note-added", role: "status", text: "Note added." }));
        onAdded();
      } else {
        // The API names the note's field `body`; on this page it is the box called Note.
        const refusal = result.field === "body" ? { ...result, field: "note" } : result;
        if (result.field === "body") box.setAttribute("aria-invalid", "true");
        const { title, detail, next } = explain(refusal);
        fill(
          outcome,
          h(
            "div",
            { class: "notice notice-error", role: "alert" },
            h("p", { class: "notice-title", text: title }),
            detail ? h("p", { class: "muted", text: detail }) : null,
            next ? h("p", { text: next }) : null,
          ),
        );
        box.focus();
      }
    } catch (error) {
      fill(outcome, errorBox("The note could not be sent.", `${error.message} Your text is still in the box; try again.`));
    } finally {
      sending = false;
      button.disabled = false;
    }
  }

  const form = h(
    "form",
    { class: "note-form", "aria-label": "Add a note", novalidate: true },
    h("label", { for: fieldId, class: "label" }, "Note"),
    box,
    h(
      "div",
      { class: "note-actions" },
      h("p", { class: "hint", id: hintId }, "Everyone whose token covers this queue can read it. A note is kept as written: to correct one, add another. Ctrl+Enter adds it."),
      button,
    ),
    outcome,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send();
  });
  box.addEventListener("input", () => box.removeAttribute("aria-invalid"));
  box.addEventListener("keydown", (event) => {
    // Ctrl+Enter adds the note; it must not reach the page's shortcut for a decision.
    if (event.key === "Enter" && event.ctrlKey) {
      event.preventDefault();
      send();
    }
  });
  return form;
}
