// What needs no server: webhook verification against signatures Casework's own signing code
// made (the pytest driver writes them to CASEWORK_TS_VECTORS), the file cursor store, and
// the mapping of union members and errors[] to typed errors.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, readFile } from "node:fs/promises";
import { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { WebSocketServer } from "ws";

import {
  CaseworkClient,
  FileCursorStore,
  MemoryCursorStore,
  ForbiddenError,
  InvalidInputError,
  InvalidTransitionError,
  NotPermittedError,
  OtherRefusalError,
  RequestError,
  UnauthenticatedError,
  WebhookVerificationError,
  requestErrorOf,
  streamErrorOf,
  successOf,
  verifyWebhook,
} from "../src/index.js";

interface Signed {
  headers: Record<string, string>;
  body: string;
}
interface Vectors {
  secret: string;
  oldSecret: string;
  plainSecret: string;
  otherSecret: string;
  messageId: string;
  single: Signed;
  rotation: Signed;
  plainStandard: Signed;
  legacy: Signed;
  stale: Signed;
}

const vectors: Vectors = JSON.parse(await readFile(process.env.CASEWORK_TS_VECTORS!, "utf8"));

test("a Standard Webhooks signature made by Casework verifies, and returns the body", () => {
  const verified = verifyWebhook<{ decisionId: string; note: string }>(vectors.secret, vectors.single.body, vectors.single.headers);
  assert.equal(verified.scheme, "standard");
  assert.equal(verified.id, vectors.messageId);
  assert.deepEqual(verified.payload, JSON.parse(vectors.single.body));
  // The raw bytes verify the same as the text (the body holds a non-ASCII character).
  const bytes = new TextEncoder().encode(vectors.single.body);
  assert.equal(verifyWebhook(vectors.secret, bytes, new Headers(vectors.single.headers)).id, vectors.messageId);
});

test("during a rotation's overlap both the old and the new secret verify", () => {
  assert.equal(vectors.rotation.headers["webhook-signature"].split(" ").length, 2);
  for (const secret of [vectors.secret, vectors.oldSecret]) {
    assert.equal(verifyWebhook(secret, vectors.rotation.body, vectors.rotation.headers).id, vectors.messageId);
  }
  assert.throws(() => verifyWebhook(vectors.otherSecret, vectors.rotation.body, vectors.rotation.headers), WebhookVerificationError);
});

test("a receiver holding several secrets accepts any one that verifies", () => {
  const verified = verifyWebhook([vectors.otherSecret, vectors.secret], vectors.single.body, vectors.single.headers);
  assert.equal(verified.id, vectors.messageId);
});

test("a secret from before Standard Webhooks (a plain string) verifies Standard signatures", () => {
  const verified = verifyWebhook(vectors.plainSecret, vectors.plainStandard.body, vectors.plainStandard.headers);
  assert.equal(verified.scheme, "standard");
});

test("the legacy Casework-Signature verifies only when allowed", () => {
  const verified = verifyWebhook(vectors.plainSecret, vectors.legacy.body, vectors.legacy.headers, { allowLegacy: true });
  assert.equal(verified.scheme, "legacy");
  assert.equal(verified.id, vectors.messageId);
  assert.throws(() => verifyWebhook(vectors.plainSecret, vectors.legacy.body, vectors.legacy.headers), WebhookVerificationError);
  assert.throws(
    () => verifyWebhook(vectors.otherSecret, vectors.legacy.body, vectors.legacy.headers, { allowLegacy: true }),
    WebhookVerificationError,
  );
});

test("a changed body, a wrong secret, a stale timestamp or a missing header is refused", () => {
  const { body, headers } = vectors.single;
  const refusals: Array<[string, () => unknown]> = [
    ["changed body", () => verifyWebhook(vectors.secret, body.replace("APPROVE", "REJECT"), headers)],
    ["one more byte", () => verifyWebhook(vectors.secret, `${body} `, headers)],
    ["wrong secret", () => verifyWebhook(vectors.otherSecret, body, headers)],
    ["stale", () => verifyWebhook(vectors.secret, vectors.stale.body, vectors.stale.headers)],
    ["no signature", () => verifyWebhook(vectors.secret, body, { ...headers, "webhook-signature": undefined })],
    ["other id", () => verifyWebhook(vectors.secret, body, { ...headers, "webhook-id": "evt_other" })],
  ];
  for (const [why, attempt] of refusals) {
    assert.throws(attempt, WebhookVerificationError, why);
  }
});

test("the file cursor store keeps the last cursor across instances", async () => {
  const path = join(await mkdtemp(join(tmpdir(), "casework-cursor-")), "nested", "cursor");
  const store = new FileCursorStore(path);
  assert.equal(await store.load(), null);
  await store.save("41");
  await store.save("42");
  assert.equal(await new FileCursorStore(path).load(), "42");
});

test("union members become typed errors; the success member is returned", () => {
  const ok = successOf({ __typename: "EnqueuedItems", items: [] } as { __typename: "EnqueuedItems"; items: never[] } | { __typename: "NotPermitted"; message: string }, "EnqueuedItems");
  assert.deepEqual(ok.items, []);
  const refusals: Array<[object, Function]> = [
    [{ __typename: "NotPermitted", message: "no" }, NotPermittedError],
    [{ __typename: "InvalidInput", message: "bad", field: "items" }, InvalidInputError],
    [{ __typename: "InvalidTransition", message: "not now", exceptionId: "1", state: "CLOSED", action: "REPORT_REDRIVE_RESULT", allowedActions: [] }, InvalidTransitionError],
    [{ __typename: "SomethingNew", message: "?" }, OtherRefusalError],
  ];
  for (const [member, kind] of refusals) {
    assert.throws(() => successOf(member as { __typename: string; message: string }, "EnqueuedItems"), kind);
  }
  try {
    successOf({ __typename: "InvalidInput", message: "bad", field: "items" } as { __typename: string; message: string }, "X");
  } catch (error) {
    assert.ok(error instanceof InvalidInputError);
    assert.equal(error.field, "items");
  }
});

test("errors[] and socket failures become typed, with whether to try again", () => {
  assert.ok(requestErrorOf([{ message: "sign in", extensions: { code: "UNAUTHENTICATED" } }], 401) instanceof UnauthenticatedError);
  assert.ok(requestErrorOf([{ message: "no", extensions: { code: "FORBIDDEN" } }]) instanceof ForbiddenError);
  const unavailable = requestErrorOf([{ message: "later", extensions: { code: "UNAVAILABLE" } }], 503, 2);
  assert.ok(unavailable instanceof RequestError && unavailable.retryable && unavailable.retryAfterSeconds === 2);
  assert.equal(streamErrorOf({ code: 1012, reason: "restart" }).retryable, true);
  assert.equal(streamErrorOf({ code: 4403, reason: "Forbidden" }).retryable, false);
  assert.equal(streamErrorOf([{ message: "bad cursor", extensions: { code: "BAD_REQUEST" } }]).retryable, false);
  assert.equal(streamErrorOf(new Error("ECONNREFUSED")).retryable, true);
});

test("a stream whose server stops answering pings is left and resumed from its cursor", { timeout: 30_000 }, async (t) => {
  // A graphql-transport-ws server that acknowledges, hands out one decision on the first
  // subscription, and never answers a ping: as if the network had dropped the way back.
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0, handleProtocols: () => "graphql-transport-ws" });
  await once(server, "listening");
  const subscribed: unknown[] = [];
  let resubscribed!: () => void;
  const second = new Promise<void>((resolve) => (resubscribed = resolve));
  server.on("connection", (socket) => {
    socket.on("message", (raw) => {
      const message = JSON.parse(String(raw));
      if (message.type === "connection_init") socket.send(JSON.stringify({ type: "connection_ack" }));
      if (message.type !== "subscribe") return;
      subscribed.push(message.payload.variables.after);
      if (subscribed.length === 1) {
        socket.send(JSON.stringify({ id: message.id, type: "next", payload: { data: { decisionEvents: { id: "8" } } } }));
      } else {
        resubscribed();
      }
    });
  });
  const stop = new AbortController();
  t.after(() => {
    stop.abort();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const client = new CaseworkClient({
    url: `http://127.0.0.1:${port}`,
    token: "cw_test",
    keepAliveMs: 200,
    reconnect: { initialDelayMs: 10, maxDelayMs: 50 },
  });
  const received: string[] = [];
  const consuming = (async () => {
    for await (const decision of client.decisionEvents("kyc", { cursorStore: new MemoryCursorStore("7"), signal: stop.signal })) {
      received.push(decision.id);
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    second,
    new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no second subscription: ${subscribed}`)), 10_000))),
  ]).finally(() => clearTimeout(timer));
  stop.abort();
  await consuming;
  assert.deepEqual(received, ["8"]);
  assert.deepEqual(subscribed, ["7", "8"]);
});
