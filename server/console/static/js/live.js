// One websocket per tab (graphql-transport-ws, through the graphql-ws client), shared by
// every subscription on the page. Its state is always on screen: "Live" or "Reconnecting".
// When it comes back after a drop, every subscription is sent again (a backlog subscription
// answers with a fresh snapshot) and every resync listener runs, so that what was missed
// while away is read again rather than silently lost.

import { createClient } from "../vendor/graphql-ws/client.js";
import * as session from "./session.js";

const FORBIDDEN = 4403;

let client = null;
let state = "offline";
let everConnected = false;
const stateListeners = new Set();
const resyncListeners = new Set();

function setState(next) {
  if (state === next) return;
  state = next;
  for (const listener of stateListeners) listener(state);
}

export function connectionState() {
  return state;
}

export function onState(listener) {
  stateListeners.add(listener);
  listener(state);
  return () => stateListeners.delete(listener);
}

/** Runs after the socket came back from a drop: re-read what may have changed. */
export function onResync(listener) {
  resyncListeners.add(listener);
  return () => resyncListeners.delete(listener);
}

function socketUrl() {
  const url = new URL("/graphql", window.location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  return url.toString();
}

export function connect() {
  disconnect();
  everConnected = false;
  setState("connecting");
  const connection = createClient({
    url: socketUrl(),
    lazy: false,
    // The token rides in connection_init, never in the URL; signed in by the provider, the
    // session cookie rides the upgrade request instead. The chosen role goes along.
    connectionParams: () => {
      const params = session.token() ? { authorization: `Bearer ${session.token()}` } : {};
      if (session.role()) params.role = session.role();
      return params;
    },
    keepAlive: 10_000,
    retryAttempts: Infinity,
    // 4403: the token was refused or revoked; retrying would not help.
    shouldRetry: (event) => !(event && event.code === FORBIDDEN),
    retryWait: (retries) =>
      new Promise((resolve) => setTimeout(resolve, Math.min(5000, 400 * 2 ** retries) + Math.random() * 400)),
    onNonLazyError: () => {},
    on: {
      connecting: () => setState(everConnected ? "reconnecting" : "connecting"),
      connected: (socket, payload, wasRetry) => {
        const resync = everConnected || wasRetry;
        everConnected = true;
        setState("live");
        if (resync) for (const listener of resyncListeners) listener();
      },
      closed: (event) => {
        if (client !== connection) return;
        if (event && event.code === FORBIDDEN) {
          setState("refused");
          session.signOut("The server refused this sign-in on the live connection. Sign in again.");
          return;
        }
        setState(everConnected ? "reconnecting" : "connecting");
      },
    },
  });
  client = connection;
}

export function disconnect() {
  const old = client;
  client = null;
  // dispose() waits for a connection still being made; when that attempt fails (the server
  // closed it: a sign-out, a role switch) it rejects with the socket's CloseEvent, which is
  // no error here: the client is gone either way.
  if (old) old.dispose().catch(() => {});
  setState("offline");
}

/**
 * Subscribes; `onData(data)` gets each result's data, `onError(message)` a refusal.
 * Returns the function that ends the subscription.
 */
export function subscribe(query, variables, onData, onError = () => {}) {
  if (!client) throw new Error("not connected");
  return client.subscribe(
    { query, variables },
    {
      next: (result) => {
        if (result.errors?.length) onError(result.errors[0].message);
        else if (result.data) onData(result.data);
      },
      error: (error) => {
        const message = error?.message ?? (error?.reason || (Array.isArray(error) ? error[0]?.message : null));
        onError(message ?? "the live connection failed");
      },
      complete: () => {},
    },
  );
}

/** What a view starts: subscriptions, resync listeners and timers, ended together. */
export class Scope {
  constructor() {
    this.endings = [];
  }
  subscribe(query, variables, onData, onError) {
    this.endings.push(subscribe(query, variables, onData, onError));
  }
  onResync(listener) {
    this.endings.push(onResync(listener));
  }
  every(milliseconds, callback) {
    const timer = setInterval(callback, milliseconds);
    this.endings.push(() => clearInterval(timer));
  }
  add(ending) {
    this.endings.push(ending);
  }
  dispose() {
    for (const end of this.endings.splice(0)) {
      try {
        end();
      } catch {
        // Ending one thing must not keep the others running.
      }
    }
  }
}
