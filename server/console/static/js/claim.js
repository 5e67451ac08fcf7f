// The lease this tab holds: one at a time. Its countdown runs on the server's clock, a
// warning shows before it ends, and `itemUpdates` says at once when it is lost (expired,
// claimed by someone else, decided elsewhere, evidence changed). A lost lease disables
// every action that needs it: nothing is submitted on a lost lease.

import { call, serverNow } from "./api.js";
import { h, fill } from "./dom.js";
import { countdown, clock, when } from "./format.js";
import * as live from "./live.js";
import * as ops from "./operations.js";
import * as session from "./session.js";

// Warn this long before the end (a quarter of the TTL for short ones).
const WARN_MS = 60_000;

let active = null;
const activeListeners = new Set();

export function activeClaim() {
  return active;
}

export function onActiveChange(listener) {
  activeListeners.add(listener);
  return () => activeListeners.delete(listener);
}

function setActive(claim) {
  active = claim;
  for (const listener of activeListeners) listener(active);
}

/** Who has the item now, in words, if not this reviewer; null if nobody else does. */
function whoTookIt(item, me) {
  if (item.state === "DECIDED") {
    const by = item.decisions?.at(-1)?.reviewer;
    return by && by !== me ? `${by} decided this item after your lease ran out.` : "This item was decided elsewhere.";
  }
  if (item.lease && item.lease.owner !== me) return `${item.lease.owner} claimed this item after your lease ran out.`;
  return null;
}

// How far back the story is read to see whether a lost lease was a manager's revocation.
const MAX_EVENT_PAGES = 10;

/** The item's newest timeline entry (the timeline pages oldest first). */
async function newestEvent(itemId) {
  let after = null;
  let last = null;
  for (let pages = 0; pages < MAX_EVENT_PAGES; pages += 1) {
    const events = (await call(ops.ITEM_EVENTS, { id: itemId, after })).item?.events;
    if (!events) break;
    last = events.edges.at(-1)?.node ?? last;
    if (!events.pageInfo.hasNextPage) break;
    after = events.pageInfo.endCursor;
  }
  return last;
}

/** Words for a lease a manager revoked, or null when the newest event is no revocation. */
async function revokedWords(itemId) {
  try {
    const event = await newestEvent(itemId);
    if (event?.kind !== "REVOKED") return null;
    return `A manager took this item back${event.body ? `: ${event.body}` : "."}`;
  } catch {
    return null;
  }
}

/** A live lease: held, then ended by its holder (decided, released, acted on) or lost. */
export class Claim {
  constructor(result, { ttlSeconds }) {
    this.item = result.item;
    this.itemId = result.item.id;
    this.queue = result.item.queue;
    this.token = result.leaseToken;
    this.evidenceHash = result.evidenceHash;
    this.expiresAt = Date.parse(result.leaseExpiresAt);
    // As the server wrote it (to the microsecond), for the subscription to compare.
    this.claimedUntil = result.leaseExpiresAt;
    // The queue's TTL when known; otherwise what this lease was given.
    this.ttlMs = ttlSeconds ? ttlSeconds * 1000 : Math.max(1000, this.expiresAt - serverNow());
    this.state = "held";
    this.lostReason = null;
    this.endedHow = null;
    // An action of ours is in flight: the updates it causes are not news.
    this.settling = false;
    this.listeners = new Set();
    this.scope = new live.Scope();
  }

  get held() {
    return this.state === "held";
  }

  get remainingMs() {
    return this.expiresAt - serverNow();
  }

  get warning() {
    return this.held && this.remainingMs <= Math.min(WARN_MS, this.ttlMs / 4);
  }

  onChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed() {
    for (const listener of this.listeners) listener(this);
  }

  start() {
    setActive(this);
    this.scope.subscribe(
      ops.ITEM_UPDATES,
      // Our lease as the claim gave it: a revocation before the subscription starts is news.
      { itemId: this.itemId, leaseExpiresAt: this.claimedUntil },
      (data) => this.update(data.itemUpdates),
      () => this.recheck(),
    );
    this.scope.onResync(() => this.recheck());
    this.scope.every(250, () => {
      if (this.held && this.remainingMs <= 0) this.lose("The lease expired before a decision was recorded.", { listen: true });
      else if (this.held) this.changed();
    });
  }

  update({ kind, item }) {
    const me = session.current()?.user;
    if (this.state === "lost") {
      // Lost before anyone else was seen with the item (a lapse, a resync): the news that
      // follows may say who took it; then the reason says so, and listening ends.
      const taken = whoTookIt(item, me);
      // A manager's revocation is the story, whoever claims the item next.
      if (taken && !this.revoked) {
        this.lostReason = taken;
        this.scope.dispose();
        this.changed();
      }
      return;
    }
    if (!this.held) return;
    const ownAction = this.settling && ["DECIDED", "ESCALATED", "SECOND_REVIEW", "RELEASED", "EXCEPTION_CHANGED"].includes(kind);
    if (ownAction) return;
    // What the item is now says best what happened: the event may be older news.
    const taken = whoTookIt(item, me);
    switch (kind) {
      case "LEASE_LOST":
        if (taken) this.lose(taken);
        else this.loseUnlessRevoked("The lease expired before a decision was recorded.");
        break;
      case "EVIDENCE_CHANGED":
        this.lose("The evidence changed: the item was uploaded again with new content.");
        break;
      case "DECIDED":
        this.lose(taken ?? "This item was decided elsewhere.");
        break;
      case "ESCALATED":
        this.lose(`The item was escalated to ${item.queue}.`);
        break;
      case "SECOND_REVIEW":
        this.lose(`The item was decided and went to ${item.queue} for a second review.`);
        break;
      case "RELEASED":
        this.lose(taken ?? "The lease was released.");
        break;
      case "NOTED":
        // A note changes no lease.
        break;
      default:
        // EXCEPTION_CHANGED, RESYNC, DECISION_CHANGED: read again and judge.
        this.recheck(item);
    }
  }

  /** Is the lease still ours? Read the item again (after a resync or a vague update). */
  async recheck(known = null) {
    if (!this.held) return;
    let item = known;
    if (!item) {
      try {
        item = (await call(ops.ITEM_STATE, { id: this.itemId })).item;
      } catch {
        return; // The socket's own state says we are not live; the next resync reads again.
      }
    }
    if (!this.held || this.settling) return;
    const me = session.current()?.user;
    if (item && item.state === "LEASED" && item.lease?.owner === me) {
      this.expiresAt = Date.parse(item.lease.expiresAt);
      if (item.evidenceHash && item.evidenceHash !== this.evidenceHash) {
        this.lose("The evidence changed: the item was uploaded again with new content.");
      }
      this.changed();
    } else if (item && whoTookIt(item, me)) {
      this.lose(whoTookIt(item, me));
    } else {
      this.loseUnlessRevoked("The lease ended: it expired or the item moved on.");
    }
  }

  /** A lease lost with nobody else holding the item: a manager's revocation says so, with
   *  its reason; otherwise `fallback`. The actions stop at once, before the story is read. */
  loseUnlessRevoked(fallback) {
    if (!this.held) return;
    this.lose(fallback, { listen: true });
    revokedWords(this.itemId).then((words) => {
      if (words && this.state === "lost") {
        this.lostReason = words;
        this.revoked = true;
        this.changed();
      }
    });
  }

  /** `listen`: the reason names nobody (the lease ran out, or a resync found it gone), so
   *  the item's updates are still heard, to say who took it if someone did (update()). */
  lose(reason, { listen = false } = {}) {
    if (!this.held) return;
    this.state = "lost";
    this.lostReason = reason;
    if (!listen) this.scope.dispose();
    this.changed();
  }

  /** We ended it ourselves: decided, released, or an exception action that ends leases. */
  end(how) {
    if (!this.held) return;
    this.state = "ended";
    this.endedHow = how;
    this.scope.dispose();
    this.changed();
  }

  async renew() {
    const result = (await call(ops.RENEW_LEASE, { itemId: this.itemId, leaseToken: this.token })).renewLease;
    if (result.__typename === "LeaseRenewed") {
      this.expiresAt = Date.parse(result.leaseExpiresAt);
      this.changed();
    } else if (result.__typename === "StaleLease") {
      this.lose("The lease had already ended when you renewed it.");
    }
    return result;
  }

  /** Parks the item until `until` for a hold reason: the lease ends as with a release. */
  async hold({ until, reason }) {
    this.settling = true;
    try {
      const input = { itemId: this.itemId, leaseToken: this.token, until, reason };
      const result = (await call(ops.HOLD_ITEM, { input })).holdItem;
      if (result.__typename === "ItemHeld") {
        this.heldUntil = result.item.hold?.until ?? until;
        this.end("held");
      } else if (result.__typename === "StaleLease") {
        this.lose("The lease had already ended when you put the item on hold.");
      }
      return result;
    } finally {
      this.settling = false;
    }
  }

  async release() {
    this.settling = true;
    try {
      const result = (await call(ops.RELEASE_LEASE, { itemId: this.itemId, leaseToken: this.token })).releaseLease;
      if (result.__typename === "LeaseReleased") this.end("released");
      else if (result.__typename === "StaleLease") this.lose("The lease had already ended.");
      return result;
    } finally {
      this.settling = false;
    }
  }
}

/** Claims the next item of a queue; returns {claim} or {refusal}. */
export async function claimNext(queue, ttlSeconds = null) {
  if (active?.held) return { refusal: { __typename: "Busy", message: "You hold a lease already." } };
  const result = (await call(ops.CLAIM_NEXT, { queue })).claimNext;
  if (result.__typename !== "Claim") return { refusal: result };
  active?.scope.dispose();
  const claim = new Claim(result, { ttlSeconds });
  claim.start();
  return { claim };
}

/** Takes up a live lease of one's own again (from me.leases or LeaseLimitReached.held):
 *  the same lease, token and all, as if this tab had claimed it. */
export function resumeLease(held, ttlSeconds = null) {
  if (active?.held && active.itemId === held.item.id) return active;
  active?.scope.dispose();
  const claim = new Claim({ ...held, evidenceHash: held.item.evidenceHash }, { ttlSeconds });
  claim.start();
  return claim;
}

/** This user's live leases, soonest to run out first; [] when they cannot be read. */
export async function myLeases() {
  try {
    return (await call(ops.MY_LEASES)).me?.leases ?? [];
  } catch {
    return [];
  }
}

export function forgetClaim() {
  active?.scope.dispose();
  setActive(null);
}

/** The lease's panel: the "Lease" status with the time left, the lost-lease alert, and
 * the Renew lease and Release buttons. It follows the claim until the claim ends. */
export function leasePanel(claim, { onEnded = () => {} } = {}) {
  const clockText = h("span", { class: "lease-clock" });
  const untilText = h("span", { class: "lease-until" });
  // The countdown changes every second; assistive technology hears the warning instead.
  const status = h(
    "div",
    { role: "status", "aria-label": "Lease", "aria-live": "off", class: "lease-status" },
    h("span", { class: "lease-dot", "aria-hidden": "true" }),
    clockText,
    untilText,
  );
  const announcer = h("div", { class: "visually-hidden", "aria-live": "polite" });
  const alert = h("div", { role: "alert", class: "lease-alert", hidden: true });
  const message = h("p", { class: "lease-message", "aria-live": "polite" });
  const renew = h("button", { type: "button", class: "button" }, "Renew lease");
  const release = h("button", { type: "button", class: "button button-quiet" }, "Release");
  let warned = false;
  let endedSeen = false;

  renew.addEventListener("click", async () => {
    renew.disabled = true;
    try {
      const result = await claim.renew();
      fill(message, result.__typename === "LeaseRenewed" ? "Renewed." : result.message ?? "");
      warned = false;
    } catch (error) {
      fill(message, `Could not renew: ${error.message}`);
    } finally {
      render();
    }
  });
  release.addEventListener("click", async () => {
    release.disabled = true;
    try {
      await claim.release();
    } catch (error) {
      fill(message, `Could not release: ${error.message}`);
    } finally {
      render();
    }
  });

  function render() {
    const remaining = claim.remainingMs;
    status.classList.toggle("is-warning", claim.warning);
    status.classList.toggle("is-lost", claim.state === "lost");
    status.classList.toggle("is-ended", claim.state === "ended");
    if (claim.held) {
      fill(clockText, `${countdown(remaining)} left`);
      fill(untilText, claim.warning ? `ends at ${clock(new Date(claim.expiresAt))}: renew now` : `until ${clock(new Date(claim.expiresAt))}`);
      if (claim.warning && !warned) {
        warned = true;
        fill(announcer, `Your lease ends in ${countdown(remaining)}. Renew it to keep the item.`);
      }
    } else if (claim.state === "lost") {
      fill(clockText, "Lost");
      fill(untilText, "");
    } else if (claim.endedHow === "held") {
      fill(clockText, "On hold");
      fill(untilText, claim.heldUntil ? `back in the queue at ${when(claim.heldUntil)}` : "");
    } else {
      fill(clockText, claim.endedHow === "released" ? "Released" : "Done");
      fill(untilText, claim.endedHow === "released" ? "the item is back in the queue" : "");
    }
    if (claim.state === "lost") {
      alert.hidden = false;
      fill(
        alert,
        h("strong", {}, "Lease lost: "),
        claim.lostReason,
        h("span", { class: "lease-alert-next" }, " Nothing was submitted. Press n to claim the next item."),
      );
    }
    renew.disabled = !claim.held;
    release.disabled = !claim.held;
    if (!claim.held && !endedSeen) {
      endedSeen = true;
      onEnded(claim);
    }
  }

  const stop = claim.onChange(render);
  render();
  const panel = h(
    "section",
    { class: "lease-panel", "aria-label": "Your lease" },
    h("div", { class: "lease-row" }, status, h("div", { class: "lease-actions" }, renew, release)),
    alert,
    message,
    announcer,
  );
  // The page that shows the panel ends it when it goes.
  panel.dispose = stop;
  return panel;
}
