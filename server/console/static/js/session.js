// Who is signed in, and how. A pasted token lives in this tab's sessionStorage only: never in
// the URL, never in localStorage, never in a log line; closing the tab forgets it. After a
// sign-in with the identity provider the browser holds only an HttpOnly session cookie that
// no script reads: then there is no token here at all, and requests carry the cookie.

const KEY = "casework.token";
const ROLE_KEY = "casework.role";
const listeners = new Set();
let me = null;
let cookie = false;

export function token() {
  return sessionStorage.getItem(KEY);
}

/** Whether this tab is signed in by the session cookie (a provider sign-in). */
export function byCookie() {
  return cookie;
}

/** The role chosen with the role switch (sent as X-Casework-Role), or null: the first. */
export function role() {
  return sessionStorage.getItem(ROLE_KEY);
}

export function setRole(name) {
  if (name) sessionStorage.setItem(ROLE_KEY, name);
  else sessionStorage.removeItem(ROLE_KEY);
}

export function current() {
  return me;
}

export function signIn(newToken, who) {
  if (newToken) sessionStorage.setItem(KEY, newToken);
  cookie = !newToken;
  me = who;
  notify();
}

/** Forgets the token; `reason` is shown on the sign-in page. */
export function signOut(reason = null) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(ROLE_KEY);
  me = null;
  cookie = false;
  notify(reason);
}

export function onChange(listener) {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function notify(reason) {
  for (const listener of listeners) listener(me, reason);
}

export function isRole(...roles) {
  return me !== null && roles.includes(me.role);
}
