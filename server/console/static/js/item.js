// One review item: the card a reviewer reads under a claim, and the item's own page
// (#/item/<id>) for anyone whose token covers its queue (a manager, an approver, a
// colleague sent the link): what it is, where it stands, its Activity and the note box.

import { call } from "./api.js";
import { activeClaim } from "./claim.js";
import { activityPanel } from "./activity.js";
import { badge, errorBox, facts, fill, h, spinner } from "./dom.js";
import { clock, preciseWhen, relative, shortHash, verdictDone, when, words } from "./format.js";
import * as ops from "./operations.js";
import { renderPayload } from "./payload.js";

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
      last ? ["Decided", `${verdictDone(last.verdict)} by ${last.reviewer}`, { "data-fact": "decided" }] : null,
    ],
  );
}

export function itemPage(main, id) {
  let activity = null;
  const content = h("div", { class: "work" }, spinner("Loading the item"));
  const title = h("h1", { text: "Item" });
  const crumbs = h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/" }, "Queues"), " / ");
  fill(main, h("div", { class: "page-head" }, h("div", {}, crumbs, title)), content);

  (async () => {
    let item;
    try {
      item = (await call(ops.ITEM, { id })).item;
    } catch (error) {
      fill(content, errorBox("The item could not be read.", error.message));
      return;
    }
    if (!item) {
      fill(content, errorBox(`There is no item ${id} that your token covers.`, "Check the address, or ask for a token that covers its queue."));
      return;
    }
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

    async function readAgain() {
      try {
        const fresh = (await call(ops.ITEM, { id })).item;
        if (!fresh) return;
        fill(status, standing(fresh));
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
        if (update.kind === "EVIDENCE_CHANGED" || update.item.evidenceHash !== item.evidenceHash) readAgain();
      },
      onResync: readAgain,
    });
    fill(
      content,
      h("div", { class: "work-main" }, cardSlot, activity.node),
      h("aside", { class: "work-side" }, h("section", { class: "card", "aria-label": "Now" }, h("h3", { class: "card-title" }, "Now"), status, yours)),
    );
  })();

  return () => {
    if (activity) activity.dispose();
  };
}
