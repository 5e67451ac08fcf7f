// GraphQL over HTTP: POST /graphql with the bearer token. Expected refusals come back as
// union members and are the caller's to show; this module throws only for transport
// problems and GraphQL errors (ApiError, with the server's extensions.code).
//
// Each document goes by its id, `documentId: "sha256:<hex of its text>"` (the server's
// trusted documents hold every text of operations.js): smaller requests, and a server in
// CASEWORK_DOCUMENTS=trusted knows them. The hash needs crypto.subtle, which browsers give
// secure contexts only (https, or localhost); elsewhere the text goes, which such a server
// accepts too, since it is the trusted text.

import * as session from "./session.js";

export class ApiError extends Error {
  constructor(message, code, { network = false, extensions = {} } = {}) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.network = network;
    // The error's other extensions: a search refused as too broad names the filters that
    // would narrow it (`narrowBy`).
    this.extensions = extensions;
  }
}

// The server's clock minus ours, from the Date header (whole seconds): lease countdowns run
// on the server's time, so a fast or slow laptop clock does not lose a lease early.
let skewMs = 0;

export function serverNow() {
  return Date.now() + skewMs;
}

function observeClock(response, sentAt, receivedAt) {
  const date = Date.parse(response.headers.get("date") ?? "");
  if (Number.isNaN(date)) return;
  const local = (sentAt + receivedAt) / 2;
  const observed = date + 500 - local;
  // Within the header's one-second resolution and the round trip, clocks agree.
  skewMs = Math.abs(observed) > 1500 + (receivedAt - sentAt) ? observed : 0;
}

/** The headers of a request: the bearer token, or (signed in by the provider) none but the
 *  CSRF header the server asks of cookie-authenticated POSTs; and the chosen role. */
function headersFor(token) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  else headers["x-casework-csrf"] = "1";
  const role = session.role();
  if (role) headers["x-casework-role"] = role;
  return headers;
}

// Each text's id, computed once (a promise, so that concurrent calls share one digest).
const ids = new Map();

/** The document's id ("sha256:<hex>"), or null where the page cannot hash. */
export function documentId(text) {
  if (!globalThis.crypto?.subtle) return Promise.resolve(null);
  let id = ids.get(text);
  if (!id) {
    id = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(text))
      .then(
        (digest) => `sha256:${Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")}`,
        () => null,
      );
    ids.set(text, id);
  }
  return id;
}

export async function graphql(query, variables = {}, { token = session.token() } = {}) {
  const id = await documentId(query);
  try {
    return await post(id ? { documentId: id, variables } : { query, variables }, token);
  } catch (error) {
    // A server that does not know the id (a page older or newer than it): nothing ran, so
    // the text goes once more.
    if (id && error instanceof ApiError && error.code === "PERSISTED_DOCUMENT_NOT_FOUND") {
      return await post({ query, variables }, token);
    }
    throw error;
  }
}

async function post(request, token) {
  const sentAt = Date.now();
  let response;
  try {
    response = await fetch("/graphql", {
      method: "POST",
      headers: headersFor(token),
      body: JSON.stringify(request),
      // The session cookie rides only to this origin; with a token, no cookie is needed.
      credentials: token ? "omit" : "same-origin",
      cache: "no-store",
    });
  } catch (error) {
    throw new ApiError("The server cannot be reached.", "NETWORK", { network: true });
  }
  observeClock(response, sentAt, Date.now());
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: a proxy's page, say. The status says enough.
  }
  const first = body?.errors?.[0];
  if (response.status === 401) {
    throw new ApiError(first?.message ?? "The token was not accepted.", "UNAUTHENTICATED");
  }
  if (first) {
    throw new ApiError(first.message, first.extensions?.code ?? "ERROR", { extensions: first.extensions ?? {} });
  }
  if (!response.ok || !body?.data) {
    throw new ApiError(`The server answered ${response.status}.`, response.status === 503 ? "UNAVAILABLE" : "ERROR", {
      network: response.status >= 500,
    });
  }
  return body.data;
}

/** As graphql(), but a refused token signs the tab out instead of failing quietly. */
export async function call(query, variables = {}) {
  try {
    return await graphql(query, variables);
  } catch (error) {
    if (error instanceof ApiError && error.code === "UNAUTHENTICATED") {
      session.signOut(
        session.byCookie()
          ? "Your session has ended (signed out, timed out or revoked). Sign in again."
          : "Your token is no longer accepted (revoked or expired). Sign in again.",
      );
    }
    throw error;
  }
}

/** GET a file of the server's (a CSV export) as this tab is signed in: the bearer token in
 *  a header, never in the address, or the session cookie. Resolves to the Response, which
 *  the caller checks (`ok`). */
export async function download(path) {
  const token = session.token();
  const headers = headersFor(token);
  delete headers["content-type"];
  try {
    return await fetch(path, { headers, credentials: token ? "omit" : "same-origin", cache: "no-store" });
  } catch {
    throw new ApiError("The server cannot be reached.", "NETWORK", { network: true });
  }
}
