// The console's shell: sign-in, the header (who you are, the connection), the sections and
// the hash router. Routes hold no secret: #/queue/kyc, #/item/42, #/exceptions/exc_…, #/manage/…,
// #/search?states=PENDING.

import { graphql } from "./api.js";
import { forgetClaim } from "./claim.js";
import { h, fill } from "./dom.js";
import { words } from "./format.js";
import * as live from "./live.js";
import * as ops from "./operations.js";
import { roleSwitch } from "./roles.js";
import * as session from "./session.js";
import * as shortcuts from "./shortcuts.js";
import { signInOptions, signInPage, signOut } from "./signin.js";
import { exceptionPage, exceptionsPage } from "./exceptions.js";
import { itemPage } from "./item.js";
import { managerHome, queueManagerPage, workflowManagerPage } from "./manager.js";
import { queueListPage, queuePage } from "./reviewer.js";
import { decisionSearchPage, itemSearchPage } from "./search.js";
import { searchBox } from "./searchbox.js";

const root = document.getElementById("app");
// Who has the Manage section: the roles that read measures (docs/measures.md).
const MANAGING_ROLES = ["manager", "admin"];
let disposeView = null;
// What the shell of the signed-in user listens to; ended on sign-out.
let shellEndings = [];

const ROUTES = [
  [/^#?\/?$/, queueListPage],
  [/^#\/queue\/([^/?]+)$/, queuePage],
  [/^#\/item\/([^/?]+)$/, itemPage],
  [/^#\/exceptions(?:\?(.*))?$/, exceptionsPage],
  [/^#\/exceptions\/([^/?]+)$/, exceptionPage],
  [/^#\/manage$/, managerHome],
  [/^#\/manage\/queue\/([^/?]+)$/, queueManagerPage],
  [/^#\/manage\/workflow\/([^/?]+)$/, workflowManagerPage],
  [/^#\/search(?:\?(.*))?$/, itemSearchPage],
  [/^#\/search\/decisions(?:\?(.*))?$/, decisionSearchPage],
];

function section(hash) {
  if (hash.startsWith("#/exceptions")) return "exceptions";
  if (hash.startsWith("#/manage")) return "manage";
  // The results of the header's search box: no section of their own.
  if (hash.startsWith("#/search")) return "search";
  return "review";
}

// ---- The shell --------------------------------------------------------------------------

function header(me) {
  const canManage = MANAGING_ROLES.includes(me.role);
  const nav = h(
    "nav",
    { class: "sections", "aria-label": "Sections" },
    h("a", { href: "#/", "data-section": "review" }, "Review"),
    h("a", { href: "#/exceptions", "data-section": "exceptions" }, "Exceptions"),
    canManage ? h("a", { href: "#/manage", "data-section": "manage" }, "Manage") : null,
  );
  const connection = h("div", { class: "connection", role: "status", "aria-label": "Connection" });
  shellEndings.push(live.onState((state) => {
    connection.dataset.state = state;
    fill(
      connection,
      h("span", { class: "connection-dot", "aria-hidden": "true" }),
      { live: "Live", connecting: "Connecting…", reconnecting: "Reconnecting…", refused: "Refused", offline: "Offline" }[state],
    );
  }));
  const queues = me.queues.length ? me.queues.join(", ") : "all queues";
  return h(
    "header",
    { class: "topbar" },
    h("a", { class: "brand", href: "#/" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "Casework"),
    nav,
    searchBox(go),
    h("div", { class: "topbar-spacer" }),
    connection,
    h(
      "div",
      { class: "who", "aria-label": "Signed in as" },
      h("span", { class: "who-user", text: me.displayName || me.user }),
      h("span", { class: "who-role", text: words(me.role) }),
      h("span", { class: "who-queues", title: queues, text: queues }),
    ),
    h(
      "button",
      { type: "button", class: "icon-button", "aria-label": "Keyboard shortcuts", title: "Keyboard shortcuts (?)", onclick: shortcuts.showShortcuts },
      "?",
    ),
    roleSwitch(me),
    h("button", { type: "button", class: "button button-quiet", onclick: () => signOut() }, "Sign out"),
  );
}

function banner() {
  const node = h(
    "div",
    { class: "reconnecting", role: "status", hidden: true },
    h("span", { class: "spin", "aria-hidden": "true" }),
    h("strong", {}, "Reconnecting to Casework… "),
    "Live figures are paused; the page reads everything again when the connection is back.",
  );
  shellEndings.push(live.onState((state) => {
    node.hidden = state !== "reconnecting";
    document.body.classList.toggle("is-stale", state === "reconnecting");
  }));
  return node;
}

function shell(me) {
  // tabindex -1: focus can be put there (the skip link, a new page), Tab never stops there.
  const main = h("main", { id: "main", class: "main", tabindex: "-1" });
  // Not a route: the hash stays the page's own, and focus moves past the header.
  const skip = h("a", { class: "skip-link", href: "#main" }, "Skip to content");
  skip.addEventListener("click", (event) => {
    event.preventDefault();
    main.focus();
  });
  fill(root, skip, header(me), banner(), main);
  return main;
}

let main = null;

/** Opens an address; the one shown already is drawn again (a search asked for once more). */
function go(hash) {
  if (window.location.hash === hash) route({ moved: true });
  else window.location.hash = hash;
}

/** Shows the page the address names. `moved`: the address changed under the reader (a
 *  link, Back): focus goes to the new page, whose content the next Tab starts from. */
function route({ moved = false } = {}) {
  if (!session.current()) return;
  if (moved && main) main.focus({ preventScroll: true });
  if (disposeView) disposeView();
  disposeView = null;
  shortcuts.setHandlers({});
  const hash = window.location.hash || "#/";
  for (const link of root.querySelectorAll(".sections a")) {
    link.toggleAttribute("aria-current", link.dataset.section === section(hash));
    if (link.hasAttribute("aria-current")) link.setAttribute("aria-current", "page");
  }
  if (section(hash) === "manage" && !session.isRole(...MANAGING_ROLES)) {
    // The API would refuse most of these figures: say why, rather than show broken panels.
    fill(main, h("div", { class: "empty" }, h("h1", {}, "Manage is for managers and admins"), h("p", {}, "Your token's role does not read a queue's or a workflow's measures. ", h("a", { href: "#/" }, "Back to your queues"))));
    return;
  }
  for (const [pattern, view] of ROUTES) {
    const match = hash.match(pattern);
    if (match) {
      const params = match.slice(1).map((part) => (part === undefined ? undefined : decodeURIComponent(part)));
      fill(main);
      window.scrollTo(0, 0);
      disposeView = view(main, ...params) || null;
      return;
    }
  }
  fill(main, h("div", { class: "empty" }, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to your queues"))));
}

function start(me, reason) {
  if (disposeView) disposeView();
  disposeView = null;
  for (const end of shellEndings.splice(0)) end();
  if (!me) {
    forgetClaim();
    live.disconnect();
    main = null;
    signInPage(root, reason);
    return;
  }
  live.connect();
  main = shell(me);
  route();
}

shortcuts.install();
window.addEventListener("hashchange", () => route({ moved: true }));
session.onChange(start);

(async () => {
  const saved = session.token();
  if (!saved) {
    // Signed in with the identity provider? Then the session cookie answers `me`.
    const { modes } = await signInOptions();
    if (modes.includes("oidc")) {
      try {
        const { me } = await graphql(ops.ME, {}, { token: null });
        session.signIn(null, me);
        return;
      } catch {
        // No session (or it ended): the sign-in page.
      }
    }
    signInPage(root);
    return;
  }
  try {
    const { me } = await graphql(ops.ME, {}, { token: saved });
    session.signIn(saved, me);
  } catch (error) {
    session.signOut(error.code === "UNAUTHENTICATED" ? "Your token is no longer accepted. Sign in again." : null);
  }
})();
