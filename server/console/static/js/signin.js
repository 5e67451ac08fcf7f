// The sign-in page, and signing out. What it offers comes from the server (GET /auth/options):
// "Sign in with <provider>" where the identity provider is configured, the token form where
// token sign-in is enabled (CASEWORK_AUTH_MODES), or both.

import { ApiError, graphql } from "./api.js";
import { h, fill } from "./dom.js";
import * as ops from "./operations.js";
import * as session from "./session.js";

let options = null;

/** The sign-in modes the server offers; tokens only when it cannot say (an older server). */
export async function signInOptions() {
  if (options) return options;
  try {
    const response = await fetch("/auth/options", { credentials: "omit", cache: "no-store" });
    options = response.ok ? await response.json() : null;
  } catch {
    options = null;
  }
  options ??= { modes: ["token"], provider: null, login: null };
  return options;
}

/** Where the provider sends the person back: this page, at the view they were on. */
export function loginUrl({ prompt = null, maxAge = null, acr = null, hash = window.location.hash } = {}) {
  const params = new URLSearchParams({ next: `/console/${hash || ""}` });
  if (prompt) params.set("prompt", prompt);
  if (maxAge !== null) params.set("max_age", String(maxAge));
  if (acr) params.set("acr_values", acr);
  return `/auth/login?${params}`;
}

/** A decision asked for a recent sign-in (ReauthenticationRequired): through the provider's
 *  login and back to the same item, whose lease lives on the server meanwhile. */
export function reauthenticate(requiredWithinSeconds, acr = null) {
  window.location.assign(loginUrl({ prompt: "login", maxAge: requiredWithinSeconds, acr }));
}

/** Signs out: a provider session ends on the server and at the provider, which then sends
 *  the browser back to this page; a token is simply forgotten. */
export async function signOut() {
  if (!session.byCookie()) {
    session.signOut();
    return;
  }
  try {
    const response = await fetch("/auth/logout", {
      method: "POST",
      headers: { "x-casework-csrf": "1" },
      credentials: "same-origin",
      cache: "no-store",
    });
    const { location } = await response.json();
    session.signOut();
    window.location.assign(location);
  } catch {
    session.signOut("Signed out here; the server could not be told. Close the browser to be sure.");
  }
}

function providerButton(opts) {
  return h(
    "a",
    { class: "button button-primary button-wide", href: loginUrl(), id: "provider-signin" },
    `Sign in with ${opts.provider}`,
  );
}

function tokenForm() {
  const input = h("input", {
    id: "token",
    name: "token",
    type: "text",
    class: "input input-secret",
    autocomplete: "off",
    autocapitalize: "off",
    spellcheck: "false",
    placeholder: "cw_…",
    required: true,
  });
  const problem = h("div", { class: "form-problem", role: "alert" });
  const button = h("button", { type: "submit", class: "button button-primary button-wide" }, "Sign in");
  const form = h(
    "form",
    { class: "signin-form", novalidate: true },
    h("label", { for: "token", class: "label" }, "Token"),
    input,
    h(
      "p",
      { class: "hint" },
      "The bearer token printed by ",
      h("code", {}, "casework token create"),
      " (or by ",
      h("code", {}, "casework serve --demo"),
      "). It stays in this tab only and is forgotten when the tab closes.",
    ),
    problem,
    button,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      fill(problem, "Paste your token first.");
      return;
    }
    button.disabled = true;
    fill(problem);
    try {
      const { me } = await graphql(ops.ME, {}, { token });
      input.value = "";
      session.signIn(token, me);
    } catch (error) {
      fill(
        problem,
        error instanceof ApiError && error.code === "UNAUTHENTICATED"
          ? "That token was not accepted. Check that it was copied whole, or ask an admin for a new one."
          : `Could not sign in: ${error.message}`,
      );
    } finally {
      button.disabled = false;
    }
  });
  return { form, input };
}

export async function signInPage(root, reason) {
  const opts = await signInOptions();
  const oidc = opts.modes.includes("oidc");
  const token = opts.modes.includes("token") ? tokenForm() : null;
  fill(
    root,
    h(
      "main",
      { class: "signin", id: "main" },
      h(
        "div",
        { class: "signin-card" },
        h("div", { class: "brand brand-large" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "Casework"),
        h("h1", {}, "Review console"),
        h("p", { class: "muted" }, "Claim review items, decide them, work exceptions, and watch the queues."),
        reason ? h("div", { class: "notice notice-warning", role: "status" }, reason) : null,
        oidc ? providerButton(opts) : null,
        oidc && token ? h("p", { class: "hint signin-or" }, "Or sign in with a token:") : null,
        token ? token.form : null,
      ),
    ),
  );
  if (token) token.input.focus();
  else root.querySelector("#provider-signin")?.focus();
}
