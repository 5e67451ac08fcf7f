// One review item: the card a reviewer reads under a claim, and the item's own page
// (#/item/<id>) for anyone whose token covers its queue (a manager, an approver, a
// colleague sent the link): what it is, where it stands, its Activity and the note box.

import { call } from "./api.js";
import { activeClaim } from "./claim.js";
import { activityPanel } from "./activity.js";
import { decisionLabels, decisionList, statusWords } from "./decisions.js";
import { badge, errorBox, facts, fill, h, readOrSay, spinner } from "./dom.js";
import { refusalBox } from "./refusals.js";
import * as session from "./session.js";
import { clock, preciseWhen, relative, shortHash, verdictDone, when, words } from "./format.js";
import * as ops from "./operations.js";
import { renderPayload } from "./payload.js";
import { protectedFields } from "./protected.js";

const STATE_TONES = { PENDING: "info", LEASED: "warning", DECIDED: "success", PARKED: "neutral" };

export function itemLink(id, text = id) {
  return h("a", { href: `#/item/${encodeURIComponent(id)}`, title: "The item's own page: its activity, for anyone in its queue", text });
}

/** The item as a reviewer reads it: key, badges, facts, payload. */
export function itemCard(item, evidenceHash) {
  const seenBefore = item.leaseCount > 1;
  return h(
    "article",
    { class: "card item-card", "aria-label": `Item ${item.externalKey}` },
    h(
      "header",
      { class: "item-head" },
      h("div", {}, h("p", { class: "eyebrow" }, "External key"), h("h2", { class: "item-key", text: item.externalKey })),
      h(
        "div",
        { class: "item-badges" },
        badge(`Priority ${item.priority}`, item.priority >= 50 ? "warning" : "neutral"),
        seenBefore
          ? badge(`Seen before: claimed ${item.leaseCount - 1} time${item.leaseCount === 2 ? "" : "s"} earlier`, "info")
          : badge("First look", "neutral"),
        item.escalationCount ? badge(`Escalated ${item.escalationCount}×`, "warning") : null,
        item.overdue ? badge("Overdue", "alert", `It was due at ${preciseWhen(item.dueAt)}`) : null,
      ),
    ),
    facts([
      item.dueAt ? ["Due", `${when(item.dueAt)} (${relative(item.dueAt)})`, { "data-fact": "due", "data-value": item.dueAt }] : null,
      ["Lease count", String(item.leaseCount), { "data-fact": "leaseCount" }],
      ["Enqueued", `${when(item.createdAt)} (${relative(item.createdAt)})`],
      ["Abandoned", String(item.abandonCount)],
      ["Item id", itemLink(item.id)],
      ["Evidence hash", h("code", { class: "hash", title: evidenceHash, text: shortHash(evidenceHash) }), { "data-fact": "evidenceHash", "data-value": evidenceHash }],
    ]),
    h("h3", { class: "card-title" }, "Payload"),
    renderPayload(item.payload),
    protectedFields(item),
  );
}

/** Where the item stands now, from the item or an itemUpdates message's item. */
function standing(item) {
  const last = item.decisions?.at(-1);
  return facts(
    [
      ["State", badge(words(item.state), STATE_TONES[item.state] ?? "neutral"), { "data-fact": "state" }],
      ["Queue", item.queue],
      item.lease ? ["Held by", `${item.lease.owner}, until ${clock(item.lease.expiresAt)}`, { "data-fact": "holder" }] : null,
      item.hold ? ["On hold", `${item.hold.reason}, until ${when(item.hold.until)}`, { "data-fact": "hold" }] : null,
      item.assignment
        ? ["Assigned to", item.assignment.until ? `${item.assignment.reviewer}, until ${when(item.assignment.until)}` : item.assignment.reviewer, { "data-fact": "assignment" }]
        : null,
      item.dueAt
        ? ["Due", h("span", {}, `${when(item.dueAt)} (${relative(item.dueAt)})`, item.overdue ? [" ", badge("Overdue", "alert")] : null), { "data-fact": "due" }]
        : null,
      last
        ? [
            last.status === "PROVISIONAL" ? "Awaiting second review" : "Decided",
            `${verdictDone(last.verdict)} by ${last.reviewer}${last.status ? ` · ${statusWords(last)}` : ""}`,
            { "data-fact": "decided", "data-status": last.status ?? undefined },
          ]
        : null,
    ],
  );
}

/** A datetime-local input's value as an ISO time, null when empty; NaN-safe. */
function isoFrom(input) {
  if (!input.value) return null;
  const moment = new Date(input.value);
  return Number.isNaN(moment.getTime()) ? undefined : moment.toISOString();
}

/**
 * A manager's controls over one waiting item: Assign (to a reviewer, until a time or not),
 * Unassign, Revoke lease (with a reason, only while leased), Resume (while held; a reviewer
 * of the queue may resume too). Each shows the typed refusal in words; `onChanged` reads the
 * item again.
 */
function itemControls(item, { onChanged, outcome }) {
  const manager = session.isRole("manager");
  const waiting = item.state === "PENDING" || item.state === "LEASED";
  if (!waiting || (!manager && !item.hold)) return null;
  const parts = [];

  async function run(button, operation, input, field, done) {
    button.disabled = true;
    fill(outcome);
    try {
      const result = (await call(operation, { input }))[field];
      if (done.success === result.__typename) {
        fill(outcome, h("p", { class: "notice notice-success", role: "status", text: done.words(result) }));
        onChanged();
      } else {
        const named = done.fields?.[result.field];
        fill(outcome, refusalBox(named ? { ...result, field: named } : result));
      }
    } catch (error) {
      fill(outcome, errorBox("Could not send it.", error.message));
    } finally {
      button.disabled = false;
    }
  }

  if (manager) {
    const reviewer = h("input", { id: "assign-reviewer", class: "input", type: "text", name: "reviewer", autocomplete: "off", value: item.assignment?.reviewer ?? "" });
    const until = h("input", { id: "assign-until", class: "input", type: "datetime-local", name: "assignUntil" });
    const assign = h("button", { type: "button", class: "button" }, "Assign");
    assign.addEventListener("click", () => {
      const moment = isoFrom(until);
      if (moment === undefined) {
        fill(outcome, refusalBox({ __typename: "InvalidInput", field: "assign until", message: "Not a time." }));
        return;
      }
      run(assign, ops.ASSIGN_ITEM, { itemId: item.id, reviewer: reviewer.value.trim(), until: moment }, "assignItem", {
        success: "ItemAssigned",
        words: (r) => `Assigned to ${r.item.assignment.reviewer}${r.item.assignment.until ? `, until ${when(r.item.assignment.until)}` : ""}.`,
        fields: { reviewer: "reviewer", until: "assign until" },
      });
    });
    parts.push(
      h("h4", {}, item.assignment ? "Reassign" : "Assign"),
      h("label", { for: "assign-reviewer", class: "label" }, "Reviewer"),
      reviewer,
      h("label", { for: "assign-until", class: "label" }, "Assign until"),
      until,
      h("p", { class: "hint" }, "Empty: until unassigned or decided. Only this reviewer claims it meanwhile."),
    );
    const row = h("div", { class: "control-row" });
    if (item.assignment) {
      const unassign = h("button", { type: "button", class: "button button-quiet" }, "Unassign");
      unassign.addEventListener("click", () =>
        run(unassign, ops.UNASSIGN_ITEM, { itemId: item.id }, "unassignItem", { success: "ItemUnassigned", words: () => "Unassigned: anyone of the queue may claim it." }),
      );
      row.append(unassign);
    }
    row.append(assign);
    parts.push(row);
    if (item.lease) {
      const reason = h("input", { id: "revoke-reason", class: "input", type: "text", name: "revocationReason", autocomplete: "off", placeholder: `Why ${item.lease.owner}’s lease ends now` });
      const revoke = h("button", { type: "button", class: "button button-danger" }, "Revoke lease");
      revoke.addEventListener("click", () =>
        run(revoke, ops.REVOKE_LEASE, { itemId: item.id, reason: reason.value }, "revokeLease", {
          success: "LeaseRevoked",
          words: (r) => `${r.owner}’s lease ended; the item is claimable again.`,
          fields: { reason: "revocation reason" },
        }),
      );
      parts.push(
        h("h4", {}, "Revoke lease"),
        h("label", { for: "revoke-reason", class: "label" }, "Revocation reason"),
        reason,
        h("p", { class: "hint" }, `${item.lease.owner} sees it at once, with this reason; nothing of theirs is submitted after it.`),
        h("div", { class: "control-row" }, revoke),
      );
    }
  }
  if (item.hold) {
    const resume = h("button", { type: "button", class: "button" }, "Resume");
    resume.addEventListener("click", () =>
      run(resume, ops.RESUME_ITEM, { itemId: item.id }, "resumeItem", { success: "ItemResumed", words: () => "Resumed: the item is claimable again." }),
    );
    parts.push(h("h4", {}, "Hold"), h("p", { class: "hint" }, "Resume ends the hold now, before its time."), h("div", { class: "control-row" }, resume));
  }
  return h("div", { class: "item-controls", role: "group", "aria-label": "Controls" }, parts);
}

export function itemPage(main, id) {
  let activity = null;
  const content = h("div", { class: "work" }, spinner("Loading the item"));
  const title = h("h1", { text: "Item" });
  const crumbs = h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/" }, "Queues"), " / ");
  fill(main, h("div", { class: "page-head" }, h("div", {}, crumbs, title)), content);

  (async () => {
    const item = await readOrSay(content, async () => (await call(ops.ITEM, { id })).item, "The item could not be read.", [
      `There is no item ${id} that your token covers.`,
      "Check the address, or ask for a token that covers its queue.",
    ]);
    if (!item) return;
    fill(title, `Item ${item.externalKey}`);
    crumbs.append(h("a", { href: `#/queue/${encodeURIComponent(item.queue)}`, text: item.queue }), " / ");
    if (item.exception) {
      // Its story is the exception's own history; notes are refused on it.
      fill(
        content,
        h(
          "div",
          { class: "notice notice-info" },
          "This item stands for an exception. ",
          h("a", { href: `#/exceptions/${encodeURIComponent(item.exception.id)}` }, "Open the exception"),
          " to read its history and act on it.",
        ),
      );
      return;
    }

    const status = h("div", {}, standing(item));
    const controlsSlot = h("div", {});
    // Outside the controls: a success redraws them and its words stay.
    const controlsOutcome = h("div", { class: "controls-outcome", "aria-live": "polite" });
    const showControls = (current) => {
      // A control being typed in is kept: live updates redraw the facts, not the fields.
      const key = JSON.stringify([current.state, current.lease?.owner ?? null, current.hold?.until ?? null, current.assignment ?? null]);
      if (controlsSlot.dataset.key === key) return;
      controlsSlot.dataset.key = key;
      fill(controlsSlot, itemControls(current, {
          onChanged: () => {
            readAgain();
            // Not every control is told on itemUpdates (an assignment is not): read the story too.
            activity?.reread();
          },
          outcome: controlsOutcome,
        }));
    };
    showControls(item);
    const claim = activeClaim();
    const yours =
      claim?.held && claim.itemId === item.id
        ? h(
            "div",
            { class: "notice notice-info" },
            "You hold the lease on this item. ",
            h("a", { href: `#/queue/${encodeURIComponent(claim.queue)}` }, "Decide it in its queue"),
          )
        : null;
    const cardSlot = h("div", {}, itemCard(item, item.evidenceHash));
    const decisionsSlot = h("div", {});
    const showDecisions = async (current) => {
      // A QA copy has no decision of its own: it checks one, whose result it shows.
      const checked = current.qaOf;
      const listed = checked ? [checked] : current.decisions;
      const labels = await decisionLabels(listed.map((d) => d.queue));
      fill(
        decisionsSlot,
        checked
          ? h(
              "p",
              { class: "muted" },
              // No item: it now sits in a queue outside the token's (an escalation moved it).
              ...(checked.item
                ? [
                    "A QA copy: it checks this decision of item ",
                    h("a", { href: `#/item/${encodeURIComponent(checked.item.id)}`, text: checked.item.externalKey }),
                    ".",
                  ]
                : ["A QA copy: it checks this decision, of an item outside your queues."]),
            )
          : null,
        decisionList(listed, labels),
      );
    };
    showDecisions(item);

    async function readAgain() {
      try {
        const fresh = (await call(ops.ITEM, { id })).item;
        if (!fresh) return;
        fill(status, standing(fresh));
        showControls(fresh);
        showDecisions(fresh);
        if (fresh.evidenceHash !== item.evidenceHash) fill(cardSlot, itemCard(fresh, fresh.evidenceHash));
        item = fresh;
      } catch {
        // The connection's state is on screen; the next update or resync reads again.
      }
    }

    activity = activityPanel(item.id, {
      queue: item.queue,
      onUpdate: (update) => {
        fill(status, standing(update.item));
        showControls({ ...item, ...update.item });
        // A decision, its confirmation, an override or a QA result: the decisions read again.
        const news = !["NOTED", "OVERDUE"].includes(update.kind);
        if (news || update.item.evidenceHash !== item.evidenceHash) readAgain();
      },
      onResync: readAgain,
    });
    fill(
      content,
      h(
        "div",
        { class: "work-main" },
        cardSlot,
        h("section", { class: "card decisions", "aria-label": "Decisions" }, h("h3", { class: "card-title" }, "Decisions"), decisionsSlot),
        activity.node,
      ),
      h("aside", { class: "work-side" }, h("section", { class: "card", "aria-label": "Now" }, h("h3", { class: "card-title" }, "Now"), status, yours, controlsSlot, controlsOutcome)),
    );
  })();

  return () => {
    if (activity) activity.dispose();
  };
}
