// Against a real `casework serve`, which the pytest driver (tests/clients/
// test_typescript_client.py) started; CASEWORK_TS_LIVE holds its URL, the tokens, and a
// control URL whose POST /restart stops the server and starts it again on the same port.
import assert from "node:assert/strict";
import { once } from "node:events";
import { type IncomingHttpHeaders, createServer } from "node:http";
import { type AddressInfo } from "node:net";
import { join } from "node:path";
import { before, test } from "node:test";

import {
  CaseworkClient,
  ConnectionError,
  DecisionTimeoutError,
  FileCursorStore,
  InvalidInputError,
  NotFoundError,
  NotPermittedError,
  UnauthenticatedError,
  verifyWebhook,
} from "../src/index.js";

interface Live {
  url: string;
  control: string;
  stateDir: string;
  tokens: { admin: string; integration: string; rita: string };
}
const live: Live = JSON.parse(process.env.CASEWORK_TS_LIVE!);
// Every wait in these tests is bounded by this.
const WAIT_MS = 20_000;

const integration = new CaseworkClient({ url: live.url, token: live.tokens.integration, reconnect: { initialDelayMs: 100, maxDelayMs: 1_000 } });
const admin = new CaseworkClient({ url: live.url, token: live.tokens.admin });
const rita = new CaseworkClient({ url: live.url, token: () => live.tokens.rita });

type Data = Record<string, any>;

async function call(client: CaseworkClient, query: string, variables: Data = {}): Promise<Data> {
  return (await client.request<Data, Data>(query, variables)) as Data;
}

async function configureQueue(name: string, effect?: Data): Promise<void> {
  const data = await call(
    admin,
    `mutation($name: String!, $effect: EffectInput) {
      q: configureQueue(input: {name: $name, effect: $effect, effectMaxAttempts: 5}) { __typename ... on Error { message } }
      r: defineReasonCode(input: {queue: $name, code: "documents_ok", label: "Documents match", verdicts: [APPROVE]}) { __typename }
    }`,
    { name, effect: effect ?? null },
  );
  assert.equal(data.q.__typename, "QueueConfigured", JSON.stringify(data));
  assert.equal(data.r.__typename, "ReasonCodeDefined");
}

/** Rita claims the next item of `queue` and approves it; the decision's id. */
async function decideNext(queue: string): Promise<string> {
  const { claimNext: claim } = await call(
    rita,
    `mutation($queue: String!) { claimNext(queue: $queue) {
      __typename ... on Claim { leaseToken evidenceHash item { id } } ... on Error { message } } }`,
    { queue },
  );
  assert.equal(claim.__typename, "Claim", JSON.stringify(claim));
  const { submitDecision: recorded } = await call(
    rita,
    `mutation($input: SubmitDecisionInput!) { submitDecision(input: $input) {
      __typename ... on DecisionRecorded { decision { id } } ... on Error { message } } }`,
    {
      input: {
        itemId: claim.item.id,
        leaseToken: claim.leaseToken,
        verdict: "APPROVE",
        reasonCode: "documents_ok",
        evidenceHash: claim.evidenceHash,
      },
    },
  );
  assert.equal(recorded.__typename, "DecisionRecorded", JSON.stringify(recorded));
  return recorded.decision.id;
}

async function decideMany(queue: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let n = 0; n < count; n += 1) ids.push(await decideNext(queue));
  return ids;
}

async function control(action: "restart" | "stop" | "start"): Promise<void> {
  const response = await fetch(`${live.control}/${action}`, { method: "POST", signal: AbortSignal.timeout(90_000) });
  assert.equal(response.status, 200, await response.text());
}

async function restartServer(): Promise<void> {
  await control("restart");
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Ids as a consumer receives them; `count(n)` resolves once n have arrived. */
class Arrivals {
  readonly ids: string[] = [];
  private waiters: Array<{ n: number; resolve: () => void }> = [];
  push(id: string): void {
    this.ids.push(id);
    this.waiters = this.waiters.filter((waiter) => (this.ids.length >= waiter.n ? (waiter.resolve(), false) : true));
  }
  count(n: number): Promise<void> {
    if (this.ids.length >= n) return Promise.resolve();
    const arrived = new Promise<void>((resolve) => this.waiters.push({ n, resolve }));
    return within(arrived, WAIT_MS, `${n} decisions (have ${this.ids.length}: ${this.ids})`);
  }
}

before(async () => {
  await configureQueue("kyc");
  const data = await call(
    admin,
    `mutation {
      ops: configureQueue(input: {name: "supplier-ops"}) { __typename }
      leads: configureQueue(input: {name: "procurement-leads"}) { __typename }
      approvals: configureQueue(input: {name: "supplier-approvals"}) { __typename }
      w: configureWorkflow(input: {name: "supplier_onboarding", approvalQueue: "supplier-approvals"}) { __typename ... on Error { message } }
      r: defineExceptionReason(input: {
        workflow: "supplier_onboarding", code: "entity_mismatch", label: "Document names another legal entity",
        ownerRole: "supplier-ops", escalationOwnerRole: "procurement-leads",
        allowedActions: [ATTACH_EVIDENCE, SUBMIT_CORRECTION, APPROVE_CORRECTION, REJECT_CORRECTION,
                         REQUEST_REDRIVE, REPORT_REDRIVE_RESULT, CLOSE_EXCEPTION, REOPEN_EXCEPTION],
        dueSeconds: {low: 259200, medium: 86400, high: 14400, critical: 3600}
      }) { __typename ... on Error { message } }
    }`,
  );
  assert.equal(data.w.__typename, "WorkflowConfigured", JSON.stringify(data));
  assert.equal(data.r.__typename, "ExceptionReasonDefined", JSON.stringify(data));
});

test("enqueueItems, a reviewer decides, waitForDecision returns that decision", { timeout: WAIT_MS * 2 }, async (t) => {
  const [entry] = await integration.enqueueItems("kyc", [{ externalKey: "case-wait", payload: { customer: "c-1" }, priority: 5 }]);
  assert.equal(entry.created, true);
  assert.equal(entry.item.state, "PENDING");
  const again = await integration.enqueueItems("kyc", [{ externalKey: "case-wait", payload: { customer: "c-1" } }]);
  assert.equal(again[0].created, false, "enqueue is idempotent on the external key");
  assert.equal(again[0].item.id, entry.item.id);

  const waiting = integration.waitForDecision(entry.item.id, { timeoutMs: WAIT_MS });
  const decisionId = await decideNext("kyc");
  const decidedAt = performance.now();
  const decision = await waiting;
  // A figure for the report, never asserted: from the decision's answer to the wait's end.
  t.diagnostic(`waitForDecision (subscription) ended ${(performance.now() - decidedAt).toFixed(1)} ms after the decision`);
  assert.equal(decision.id, decisionId);
  assert.equal(decision.verdict, "APPROVE");
  assert.equal(decision.status, "EFFECTIVE");
  assert.equal(decision.reviewer, "rita");
  assert.equal(decision.item?.id, entry.item.id);
  // Decided already: answered at once.
  assert.equal((await integration.waitForDecision(entry.item.id, { timeoutMs: 1 })).id, decisionId);
});

test("waitForDecision falls back to reading the item when no socket can be had", { timeout: WAIT_MS * 2 }, async (t) => {
  // A WebSocket class (as graphql-ws checks) whose every connection fails, as through a
  // proxy that refuses the upgrade.
  class NoSocket {
    static CONNECTING = 0;
    static OPEN = 1;
    static CLOSING = 2;
    static CLOSED = 3;
    readyState = NoSocket.CONNECTING;
    onerror: ((event: unknown) => void) | null = null;
    onclose: ((event: unknown) => void) | null = null;
    constructor() {
      queueMicrotask(() => {
        this.readyState = NoSocket.CLOSED;
        this.onerror?.(new Error("the upgrade was refused"));
        this.onclose?.({ code: 1006, reason: "", wasClean: false });
      });
    }
    send(): void {}
    close(): void {}
  }
  const polling = new CaseworkClient({ url: live.url, token: live.tokens.integration, webSocketImpl: NoSocket });
  const [entry] = await polling.enqueueItems("kyc", [{ externalKey: "case-poll", payload: { customer: "c-2" } }]);
  const waiting = polling.waitForDecision(entry.item.id, { timeoutMs: WAIT_MS, pollIntervalMs: 200 });
  const decisionId = await decideNext("kyc");
  const decidedAt = performance.now();
  assert.equal((await waiting).id, decisionId);
  t.diagnostic(`waitForDecision (polling) ended ${(performance.now() - decidedAt).toFixed(1)} ms after the decision`);
});

test("no decision within the timeout is DecisionTimeoutError, never an approval", async () => {
  const [entry] = await integration.enqueueItems("kyc", [{ externalKey: "case-undecided", payload: { customer: "c-3" } }]);
  await assert.rejects(integration.waitForDecision(entry.item.id, { timeoutMs: 300 }), DecisionTimeoutError);
});

test("refusals arrive as typed errors", async () => {
  await assert.rejects(rita.enqueueItems("kyc", [{ externalKey: "k", payload: {} }]), NotPermittedError);
  await assert.rejects(integration.enqueueItems("kyc", [{ externalKey: "k", payload: [1, 2] }]), InvalidInputError);
  await assert.rejects(integration.waitForDecision("999999999", { timeoutMs: 1_000 }), NotFoundError);
  const stranger = new CaseworkClient({ url: live.url, token: "not-a-token" });
  await assert.rejects(stranger.enqueueItems("kyc", []), UnauthenticatedError);
  await assert.rejects(
    rita.raiseException({ workflow: "supplier_onboarding", sourceRecordId: "s-0", reasonCode: "entity_mismatch", detail: "x", consequence: "LOW" }),
    NotPermittedError,
  );
});

test("raiseException is idempotent; reportRedriveResult refuses an unknown key, typed", async () => {
  const input = {
    workflow: "supplier_onboarding",
    sourceRecordId: "supplier-42",
    reasonCode: "entity_mismatch",
    detail: "The certificate names another legal entity",
    consequence: "HIGH" as const,
    completedSteps: ["fetch_certificate"],
    blockedStep: "activate_supplier",
    evidence: ["doc://certificates/42"],
  };
  const raised = await integration.raiseException(input);
  assert.equal(raised.created, true);
  assert.equal(raised.exception.state, "NEEDS_REVIEW");
  const again = await integration.raiseException(input);
  assert.equal(again.created, false);
  assert.equal(again.exception.id, raised.exception.id);
  assert.equal(again.exception.recurrences, 1);
  await assert.rejects(
    integration.raiseException({ ...input, workflow: "no_such_workflow" }),
    (error: unknown) => error instanceof InvalidInputError || error instanceof NotPermittedError,
  );
  await assert.rejects(
    integration.reportRedriveResult({ redriveKey: "no-such-key", succeeded: true }),
    InvalidInputError,
  );
  await assert.rejects(rita.reportRedriveResult({ redriveKey: "no-such-key", succeeded: true }), NotPermittedError);
});

test("the idempotent helpers try again while the server is away", { timeout: 120_000 }, async () => {
  const patient = new CaseworkClient({ url: live.url, token: live.tokens.integration, attempts: 10 });
  await control("stop");
  let pending: Promise<unknown> | undefined;
  try {
    await assert.rejects(
      new CaseworkClient({ url: live.url, token: live.tokens.integration, attempts: 1 }).enqueueItems("kyc", []),
      ConnectionError,
    );
    pending = patient.enqueueItems("kyc", [{ externalKey: "while-away", payload: { customer: "c-5" } }]);
    // Handled when awaited below; until then a rejection is not an unhandled one.
    pending.catch(() => undefined);
  } finally {
    await control("start");
  }
  const [entry] = (await pending) as Awaited<ReturnType<CaseworkClient["enqueueItems"]>>;
  assert.equal(entry.item.externalKey, "while-away");
  assert.equal(entry.created, true);
});

interface Received {
  headers: IncomingHttpHeaders;
  body: Buffer;
}

test("a decision webhook Casework delivers verifies with verifyWebhook, the same webhook-id on its retry", { timeout: WAIT_MS * 2 }, async () => {
  const secret = `whsec_${Buffer.from("casework-ts-client-test-secret-32b").toString("base64")}`;
  const deliveries: Received[] = [];
  let arrived: () => void;
  const twoArrived = new Promise<void>((resolve) => (arrived = resolve));
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      deliveries.push({ headers: request.headers, body: Buffer.concat(chunks) });
      // The first attempt fails: Casework tries again, signed anew, with the same id.
      response.writeHead(deliveries.length === 1 ? 503 : 200).end();
      if (deliveries.length === 2) arrived();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  try {
    const { port } = receiver.address() as AddressInfo;
    await configureQueue("hooks", { kind: "WEBHOOK", target: `http://127.0.0.1:${port}/casework`, secret });
    const [entry] = await integration.enqueueItems("hooks", [{ externalKey: "hooked", payload: { customer: "c-4" } }]);
    const decisionId = await decideNext("hooks");
    await within(twoArrived, WAIT_MS, "two webhook deliveries");
    const verified = deliveries.map((delivery) => verifyWebhook<Data>(secret, delivery.body, delivery.headers));
    assert.deepEqual(verified.map((one) => one.scheme), ["standard", "standard"]);
    assert.equal(verified[0].id, verified[1].id, "a retry keeps its webhook-id");
    assert.equal(verified[0].id, decisionId);
    assert.equal(verified[1].payload.decisionId, decisionId);
    assert.equal(verified[1].payload.itemId, entry.item.id);
    const wrong = `whsec_${Buffer.from("some-other-secret-of-32-bytes-xx").toString("base64")}`;
    assert.throws(() => verifyWebhook(wrong, deliveries[1].body, deliveries[1].headers));
  } finally {
    receiver.close();
  }
});

test("decisionEvents resumes after server restarts and client restarts, without a gap or a repeat", { timeout: 180_000 }, async (t) => {
  const queue = "stream";
  await configureQueue(queue);
  await integration.enqueueItems(
    queue,
    Array.from({ length: 30 }, (_, n) => ({ externalKey: `s-${n}`, payload: { n } })),
  );
  const store = new FileCursorStore(join(live.stateDir, "decision-cursor"));
  // The integration's last processed decision before this run: the stream resumes after it.
  const first = await decideNext(queue);
  await store.save(first);

  const arrivals = new Arrivals();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let cursorWhileBlocked: string | null = null;
  const stop = new AbortController();
  const stopLater = new AbortController();
  // Whatever fails, no consumer outlives the test.
  t.after(() => {
    release();
    stop.abort();
    stopLater.abort();
  });
  const consuming = (async () => {
    for await (const decision of integration.decisionEvents(queue, { cursorStore: store, signal: stop.signal })) {
      arrivals.push(decision.id);
      if (arrivals.ids.length === 8) {
        cursorWhileBlocked = await store.load();
        // The handler is busy with the 8th while the server restarts and decides on.
        await within(gate, 120_000, "the gate");
      }
    }
  })();

  const decided = await decideMany(queue, 8);
  await arrivals.count(8);
  // Made while the handler holds the 8th: pushed down the socket the restart then closes.
  decided.push(...(await decideMany(queue, 2)));
  await restartServer();
  // Made while the consumer has no socket at all.
  decided.push(...(await decideMany(queue, 6)));
  const releasedAt = performance.now();
  release();
  await arrivals.count(decided.length);
  t.diagnostic(`after the restart, the 8 decisions the stream had not sent arrived ${(performance.now() - releasedAt).toFixed(1)} ms after the handler returned`);
  assert.equal(cursorWhileBlocked, decided[6], "the cursor is saved only after the handler returns");

  // A restart while the consumer waits on an open stream.
  await restartServer();
  const restartedAt = performance.now();
  decided.push(...(await decideMany(queue, 3)));
  await arrivals.count(decided.length);
  t.diagnostic(`after a restart under an idle stream, 3 decisions arrived ${(performance.now() - restartedAt).toFixed(1)} ms after the server was back`);
  // One more, so that a repeat of anything before it would have arrived first.
  decided.push(await decideNext(queue));
  await arrivals.count(decided.length);
  stop.abort();
  await within(consuming, WAIT_MS, "the consumer to end");
  assert.deepEqual(arrivals.ids, decided, "every decision once, in commit order");
  assert.equal(await store.load(), decided.at(-1));

  // The consumer's own process restarts: a new client, the same cursor file.
  const missed = await decideMany(queue, 3);
  const resumed = new CaseworkClient({ url: live.url, token: live.tokens.integration });
  const later = new Arrivals();
  const consumingLater = (async () => {
    for await (const decision of resumed.decisionEvents(queue, { cursorStore: new FileCursorStore(store.path), signal: stopLater.signal })) {
      later.push(decision.id);
    }
  })();
  await later.count(3);
  const sentinel = await decideNext(queue);
  await later.count(4);
  stopLater.abort();
  await within(consumingLater, WAIT_MS, "the second consumer to end");
  assert.deepEqual(later.ids, [...missed, sentinel]);
});
