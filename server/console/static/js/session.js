// Who is signed in. The token lives in this tab's sessionStorage only: never in the URL,
// never in localStorage or a cookie, never in a log line. Closing the tab forgets it.

const KEY = "casework.token";
const listeners = new Set();
let me = null;

export function token() {
  return sessionStorage.getItem(KEY);
}

export function current() {
  return me;
}

export function signIn(newToken, who) {
  sessionStorage.setItem(KEY, newToken);
  me = who;
  notify();
}

/** Forgets the token; `reason` is shown on the sign-in page. */
export function signOut(reason = null) {
  sessionStorage.removeItem(KEY);
  me = null;
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
