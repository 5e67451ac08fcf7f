// A small Casework client: queries and mutations over fetch, subscriptions over graphql-ws
// (the graphql-transport-ws protocol Casework speaks), and the helpers an integrator needs.
import { type Client as SocketClient, createClient } from "graphql-ws";
import WebSocket from "ws";

import { type CursorStore } from "./cursor.js";
import {
  CaseworkError,
  ConnectionError,
  DecisionTimeoutError,
  type FormattedError,
  NotFoundError,
  RequestError,
  requestErrorOf,
  successOf,
} from "./errors.js";
import {
  DecisionEventsDocument,
  EnqueueItemsDocument,
  ItemDecisionDocument,
  ItemUpdatesDocument,
  RaiseExceptionDocument,
  ReportRedriveResultDocument,
} from "./documents.js";
import type {
  DecisionFieldsFragment,
  EnqueueItemsMutation,
  NewItemInput,
  RaiseExceptionInput,
  RaiseExceptionMutation,
  ReportRedriveResultInput,
  ReportRedriveResultMutation,
  TypedDocumentString,
} from "./gql/graphql.js";

export type Decision = DecisionFieldsFragment;
export type EnqueuedItem = Extract<EnqueueItemsMutation["enqueueItems"], { __typename: "EnqueuedItems" }>["items"][number];
export type ExceptionRaised = Extract<RaiseExceptionMutation["raiseException"], { __typename: "ExceptionRaised" }>;
export type RedriveResultRecorded = Extract<
  ReportRedriveResultMutation["reportRedriveResult"],
  { __typename: "RedriveResultRecorded" }
>;
export type { NewItemInput, RaiseExceptionInput, ReportRedriveResultInput };

/** A document: generated (typed) or a plain string (untyped). */
export type Document<Result, Variables> = TypedDocumentString<Result, Variables> | string;

export interface ReconnectOptions {
  /** First wait before reconnecting a stream, doubled per failed try (default 250 ms). */
  initialDelayMs?: number;
  /** The longest wait between tries (default 5000 ms). */
  maxDelayMs?: number;
  /** Give up after this many failed tries in a row (default: never). */
  maxAttempts?: number;
}

export interface CaseworkClientOptions {
  /** The service, e.g. `https://casework.example.com` (or its `/graphql` endpoint). */
  url: string;
  /** A bearer token, or a function returning the current one. */
  token: string | (() => string | Promise<string>);
  /** Per HTTP request (default 30 s). */
  requestTimeoutMs?: number;
  /** How decisionEvents reconnects after the server or the network went away. */
  reconnect?: ReconnectOptions;
  /** How often an open socket is pinged; a missing pong (within half of it) ends the socket
   * and the stream reconnects (default 10000 ms; 0: no pings). */
  keepAliveMs?: number;
  /** Tries of enqueueItems, raiseException and reportRedriveResult (each idempotent on the
   * server) when the service cannot be reached or is unavailable (default 3). */
  attempts?: number;
  /** fetch, if not the global one. */
  fetch?: typeof globalThis.fetch;
  /** A WebSocket constructor, if not npm `ws`. */
  webSocketImpl?: unknown;
}

export interface WaitOptions {
  /** Give up after this long (DecisionTimeoutError). Required: there is no default wait. */
  timeoutMs: number;
  /** The longest pause between two reads of the item (default 5000 ms). */
  pollIntervalMs?: number;
  signal?: AbortSignal;
}

export interface DecisionEventsOptions {
  /** Where the last processed decision id is kept; the stream resumes after it. */
  cursorStore: CursorStore;
  /** Ends the stream (the iteration returns). */
  signal?: AbortSignal;
}

// WebSocket close codes after which trying again cannot help: the graphql-transport-ws
// refusals (bad request, unauthorized, forbidden, duplicate, too many init requests).
const FATAL_CLOSE_CODES = new Set([4400, 4401, 4403, 4406, 4409, 4429]);

function endpoint(url: string): URL {
  const parsed = new URL(url);
  if (!parsed.pathname.replace(/\/+$/, "").endsWith("/graphql")) {
    parsed.pathname = `${parsed.pathname.replace(/\/+$/, "")}/graphql`;
  }
  return parsed;
}

function socketUrl(httpUrl: URL): string {
  const socket = new URL(httpUrl);
  socket.protocol = httpUrl.protocol === "https:" ? "wss:" : "ws:";
  return socket.toString();
}

function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (aborted(signal)) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

function isCloseEvent(value: unknown): value is { code: number; reason: string } {
  return typeof value === "object" && value !== null && typeof (value as { code?: unknown }).code === "number";
}

/** What a subscription failed with, as this client's errors; `retryable` says whether a
 * stream should reconnect. */
export function streamErrorOf(failure: unknown): { error: CaseworkError; retryable: boolean } {
  if (Array.isArray(failure)) {
    const error = requestErrorOf(failure as FormattedError[]);
    return { error, retryable: error.retryable };
  }
  if (failure instanceof RequestError) return { error: failure, retryable: failure.retryable };
  if (failure instanceof CaseworkError) return { error: failure, retryable: false };
  if (isCloseEvent(failure)) {
    const error = new ConnectionError(`the socket closed: ${failure.code} ${failure.reason}`.trim());
    return { error, retryable: !FATAL_CLOSE_CODES.has(failure.code) };
  }
  const message = failure instanceof Error ? failure.message : String((failure as { message?: unknown })?.message ?? failure);
  return { error: new ConnectionError(`the socket failed: ${message}`, { cause: failure }), retryable: true };
}

export class CaseworkClient {
  readonly httpUrl: URL;
  readonly wsUrl: string;
  private readonly options: CaseworkClientOptions;

  constructor(options: CaseworkClientOptions) {
    this.options = options;
    this.httpUrl = endpoint(options.url);
    this.wsUrl = socketUrl(this.httpUrl);
  }

  private async token(): Promise<string> {
    const { token } = this.options;
    return typeof token === "function" ? await token() : token;
  }

  /** Runs a query or mutation. Returns `data`; throws RequestError for `errors[]` or an
   * HTTP error status, ConnectionError when the service cannot be reached. */
  async request<Result, Variables>(document: Document<Result, Variables>, variables: Variables): Promise<Result> {
    const fetcher = this.options.fetch ?? globalThis.fetch;
    let response: Response;
    try {
      response = await fetcher(this.httpUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/graphql-response+json, application/json",
          authorization: `Bearer ${await this.token()}`,
        },
        body: JSON.stringify({ query: document.toString(), variables }),
        signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 30_000),
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const why = [(error as Error).message, cause?.code ?? cause?.message].filter(Boolean).join(": ");
      throw new ConnectionError(`${this.httpUrl} cannot be reached (${why})`, { cause: error });
    }
    const text = await response.text();
    let body: { data?: Result | null; errors?: FormattedError[] } = {};
    try {
      body = text ? JSON.parse(text) : {};
    } catch {
      // Not GraphQL (a proxy's error page): the status says it.
    }
    const retryAfter = Number.parseInt(response.headers.get("retry-after") ?? "", 10);
    if (body.errors?.length || !response.ok || body.data == null) {
      const errors = body.errors ?? [{ message: `HTTP ${response.status}: ${text.slice(0, 200)}` }];
      throw requestErrorOf(errors, response.status, Number.isFinite(retryAfter) ? retryAfter : undefined);
    }
    return body.data;
  }

  /** A graphql-ws client of its own, which never reconnects by itself: the callers decide
   * what a reconnection resumes from. */
  private socket(): SocketClient {
    // A ping every keepAliveMs; no pong within half of it and the socket is closed (4408),
    // so that a connection the network silently dropped ends and the stream reconnects.
    const keepAlive = this.options.keepAliveMs ?? 10_000;
    let socket: { readyState: number; close(code: number, reason: string): void } | undefined;
    let unanswered: NodeJS.Timeout | undefined;
    return createClient({
      url: this.wsUrl,
      webSocketImpl: this.options.webSocketImpl ?? WebSocket,
      connectionParams: async () => ({ authorization: `Bearer ${await this.token()}` }),
      lazy: true,
      retryAttempts: 0,
      keepAlive,
      on: {
        connected: (connected) => {
          socket = connected as typeof socket;
        },
        ping: (received) => {
          if (received) return;
          clearTimeout(unanswered);
          unanswered = setTimeout(() => socket?.readyState === 1 && socket.close(4408, "no pong"), keepAlive / 2);
        },
        pong: (received) => {
          if (received) clearTimeout(unanswered);
        },
        closed: () => clearTimeout(unanswered),
      },
    });
  }

  /** Runs an idempotent mutation again while the service cannot be reached or says it is
   * unavailable (after its Retry-After, else 250 ms doubling), up to `attempts` tries. */
  private async idempotent<Result, Variables>(document: TypedDocumentString<Result, Variables>, variables: Variables): Promise<Result> {
    const attempts = Math.max(this.options.attempts ?? 3, 1);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.request(document, variables);
      } catch (error) {
        const passing = error instanceof ConnectionError || (error instanceof RequestError && error.retryable);
        if (!passing || attempt >= attempts) throw error;
        const retryAfter = error instanceof RequestError ? error.retryAfterSeconds : undefined;
        await pause(retryAfter !== undefined ? retryAfter * 1000 : 250 * 2 ** (attempt - 1));
      }
    }
  }

  /** Adds items to a queue, all or nothing; idempotent on each item's externalKey. */
  async enqueueItems(queue: string, items: NewItemInput[]): Promise<EnqueuedItem[]> {
    const data = await this.idempotent(EnqueueItemsDocument, { queue, items });
    return successOf(data.enqueueItems, "EnqueuedItems").items;
  }

  /** Raises an exception (idempotent: the same open exception again counts a recurrence,
   * `created: false`). */
  async raiseException(input: RaiseExceptionInput): Promise<ExceptionRaised> {
    const data = await this.idempotent(RaiseExceptionDocument, { input });
    return successOf(data.raiseException, "ExceptionRaised");
  }

  /** Reports the durable result of a redrive Casework handed over (its redrive key). */
  async reportRedriveResult(input: ReportRedriveResultInput): Promise<RedriveResultRecorded> {
    const data = await this.idempotent(ReportRedriveResultDocument, { input });
    return successOf(data.reportRedriveResult, "RedriveResultRecorded");
  }

  /**
   * Waits until the item is decided and returns the decision that stands (an escalation or
   * a provisional decision waiting for its second review is not the end: it waits on).
   * Listens on the itemUpdates subscription and reads the item when told, and also every
   * so often (from 250 ms, doubling up to pollIntervalMs), so it still ends in time if the
   * socket cannot be had. Throws DecisionTimeoutError at the deadline: never an approval.
   */
  async waitForDecision(itemId: string, options: WaitOptions): Promise<Decision> {
    const deadline = Date.now() + options.timeoutMs;
    const maxInterval = options.pollIntervalMs ?? 5_000;
    let woken = new AbortController();
    const rouse = () => woken.abort();
    options.signal?.addEventListener("abort", rouse);
    const socket = this.socket();
    const unsubscribe = socket.subscribe(
      { query: ItemUpdatesDocument.toString(), variables: { itemId } },
      { next: rouse, error: () => undefined, complete: () => undefined },
    );
    try {
      let interval = 250;
      for (;;) {
        if (aborted(options.signal)) throw new CaseworkError("waitForDecision was aborted");
        // A fresh signal before each read: an update arriving during the read cuts the pause.
        woken = new AbortController();
        try {
          const { item } = await this.request(ItemDecisionDocument, { id: itemId });
          if (item === null) {
            throw new NotFoundError({ __typename: "NotFound", message: `no item ${itemId} that the token covers`, id: itemId });
          }
          if (item.state === "DECIDED" && item.currentDecision !== null) return item.currentDecision;
        } catch (error) {
          // The service restarting, or its database away for a moment: read again later.
          const passing = error instanceof ConnectionError || (error instanceof RequestError && error.retryable);
          if (!passing) throw error;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new DecisionTimeoutError(itemId, options.timeoutMs);
        await pause(Math.min(interval, left), woken.signal);
        interval = Math.min(interval * 2, maxInterval);
      }
    } finally {
      options.signal?.removeEventListener("abort", rouse);
      unsubscribe();
      await socket.dispose();
    }
  }

  /**
   * Every decision of a queue that takes effect, in commit order, resuming after the
   * cursor store's id (or from now when it holds none). The cursor is saved when the loop
   * asks for the next decision, that is after its body finished with this one; a body that
   * throws or breaks leaves it unsaved, so that decision comes again next time: at least
   * once. A dropped socket or a restarting server is reconnected from the saved cursor,
   * so nothing is skipped and, with each body finishing, nothing repeats.
   */
  async *decisionEvents(queue: string, options: DecisionEventsOptions): AsyncGenerator<Decision, void, undefined> {
    const { cursorStore, signal } = options;
    const reconnect = this.options.reconnect ?? {};
    let failures = 0;
    while (!aborted(signal)) {
      const after = await cursorStore.load();
      const socket = this.socket();
      const stop = () => void socket.dispose();
      signal?.addEventListener("abort", stop, { once: true });
      const results = socket.iterate<{ decisionEvents: Decision }>({
        query: DecisionEventsDocument.toString(),
        variables: { queue, after },
      });
      try {
        for await (const result of results) {
          if (result.errors?.length) throw requestErrorOf(result.errors as FormattedError[]);
          failures = 0;
          const decision = result.data!.decisionEvents;
          yield decision;
          await cursorStore.save(decision.id);
        }
      } catch (failure) {
        if (aborted(signal)) return;
        const { error, retryable } = streamErrorOf(failure);
        failures += 1;
        if (!retryable || failures > (reconnect.maxAttempts ?? Number.POSITIVE_INFINITY)) throw error;
      } finally {
        signal?.removeEventListener("abort", stop);
        await results.return?.();
        await socket.dispose();
      }
      const initial = reconnect.initialDelayMs ?? 250;
      const delay = Math.min(initial * 2 ** Math.max(failures - 1, 0), reconnect.maxDelayMs ?? 5_000);
      // Jitter, so that many clients of a restarted server do not come back at once.
      await pause(delay * (0.5 + Math.random() / 2), signal);
    }
  }
}
