// Step-up: a queue or workflow may ask for a recent sign-in before a decision or an approval
// (requireAuthWithinSeconds, requireAcr). An older one is refused with
// ReauthenticationRequired; nothing is written and the lease stays. Signed in with the
// provider, the person is told so and sent through its login again (prompt=login, max_age),
// back to the same page; what they had typed waits in this tab's sessionStorage, keyed by the
// item, and the page takes the lease up again from me.leases as after a reload. Signed in
// with a token, no fresh login can be proven: the refusal is said as an error.

import { activeClaim, myLeases, resumeLease } from "./claim.js";
import { h, fill, refusalNotice } from "./dom.js";
import * as session from "./session.js";
import { reauthenticate } from "./signin.js";

const PREFIX = "casework.reauth.";
// Long enough to read the message (it is also announced), short enough not to wait on.
const GO_AFTER_MS = 2500;

/** "within 5 minutes", "within 90 seconds"; "" when any age is accepted. */
function within(seconds) {
  if (!seconds) return "";
  if (seconds % 60) return ` (within ${seconds} seconds)`;
  const minutes = seconds / 60;
  return ` (within ${minutes} minute${minutes === 1 ? "" : "s"})`;
}

function asked(result, where) {
  const context = result.acr ? `, made with “${result.acr}”` : "";
  return `This ${where} asks for a recent sign-in${within(result.requiredWithinSeconds)}${context}.`;
}

/** Handles a ReauthenticationRequired answer in `outcome`; `draft`: what the form held,
 *  restored after the round trip ({verdict, reason, note}, any of them). */
export function stepUp(outcome, result, { itemId, draft = {}, where = "queue" }) {
  if (!session.byCookie()) {
    fill(
      outcome,
      refusalNotice({
        title: `${asked(result, where)} A token sign-in cannot prove one, so nothing was recorded.`,
        detail: result.message,
        next: "Sign out and sign in with your organisation's identity provider, then send it again. Your item stays claimed until its lease runs out.",
      }),
    );
    return;
  }
  sessionStorage.setItem(PREFIX + itemId, JSON.stringify({ at: Date.now(), draft }));
  let gone = false;
  const go = () => {
    if (gone) return;
    gone = true;
    reauthenticate(result.requiredWithinSeconds, result.acr);
  };
  const now = h("button", { type: "button", class: "button button-primary" }, "Sign in now");
  now.addEventListener("click", go);
  fill(
    outcome,
    h(
      "div",
      { class: "notice notice-info step-up", role: "status" },
      h("p", { class: "notice-title", text: `${asked(result, where)} Signing you in again; your item stays claimed.` }),
      h("p", { text: "Nothing was recorded yet. What you typed here comes back with you: check it and send it again." }),
      now,
    ),
  );
  setTimeout(go, GO_AFTER_MS);
}

/** Whether this tab went to sign in again from `itemId`'s page (and has not come back yet). */
export function awaitsReturn(itemId) {
  return sessionStorage.getItem(PREFIX + itemId) !== null;
}

/** Back from the sign-in: the draft kept for `itemId` (forgotten now), or null. */
export function takeDraft(itemId) {
  const kept = sessionStorage.getItem(PREFIX + itemId);
  if (kept === null) return null;
  sessionStorage.removeItem(PREFIX + itemId);
  try {
    return JSON.parse(kept).draft ?? {};
  } catch {
    return {};
  }
}

/** The notice on the page when the person is back, lease and all. */
export function welcomeBack(restored) {
  return h(
    "div",
    { class: "notice notice-info", role: "status" },
    h("p", { class: "notice-title", text: "Signed in again. Your item is still claimed." }),
    h("p", { text: restored ? "What you had typed is back: check it and send it again." : "Send it again." }),
  );
}

/** On a page that finds no claim of this tab's (an exception's): back from signing in again
 *  for `itemId`, its lease is taken up from me.leases; the draft kept, or null. */
export async function resumeAfterSignIn(itemId) {
  if (!awaitsReturn(itemId) || activeClaim()?.held) return null;
  const lease = (await myLeases()).find((held) => held.item.id === itemId);
  if (lease) resumeLease(lease);
  return takeDraft(itemId);
}
