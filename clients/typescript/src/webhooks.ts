// Verifying what Casework posts: Standard Webhooks (`webhook-id`, `webhook-timestamp`,
// `webhook-signature`, checked by npm's `standardwebhooks`), and, for a target configured
// before Standard Webhooks, the legacy `Casework-Signature` header.
import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook, WebhookVerificationError as StandardError } from "standardwebhooks";

import { WebhookVerificationError } from "./errors.js";

const PREFIX = "whsec_";
const MIN_SECRET_BYTES = 16;
const TOLERANCE_SECONDS = 300;

/** Headers as Node's http module, fetch's Headers, or a plain object hold them. */
export type WebhookHeaders =
  | Headers
  | Record<string, string | string[] | undefined>;

export interface VerifiedWebhook<Payload = unknown> {
  /** `webhook-id` (or, legacy, `Idempotency-Key`): the same on every retry; dedupe on it. */
  id: string;
  /** When it was signed (unix seconds). */
  timestamp: number;
  /** The JSON body, parsed. */
  payload: Payload;
  scheme: "standard" | "legacy";
}

export interface VerifyOptions {
  /** Also accept the legacy `Casework-Signature` header when the Standard headers are absent
   * (a target configured before Standard Webhooks, during its migration). Default false. */
  allowLegacy?: boolean;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(" ") : value;
  }
  return undefined;
}

function standardKey(secret: string): Uint8Array | null {
  if (!secret.startsWith(PREFIX)) return null;
  const encoded = secret.slice(PREFIX.length);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return null;
  const key = Buffer.from(encoded, "base64");
  return key.length >= MIN_SECRET_BYTES ? new Uint8Array(key) : null;
}

/** The HMAC key a secret stands for, as Casework signs with it: the bytes of a `whsec_`
 * secret, else the UTF-8 bytes of a secret configured before Standard Webhooks. */
export function secretKey(secret: string): Uint8Array {
  return standardKey(secret) ?? new TextEncoder().encode(secret);
}

function bodyText(body: string | Uint8Array): string {
  return typeof body === "string" ? body : new TextDecoder().decode(body);
}

function verifyStandard(secrets: string[], body: string | Uint8Array, headers: WebhookHeaders): VerifiedWebhook {
  const id = header(headers, "webhook-id") ?? "";
  const timestamp = header(headers, "webhook-timestamp") ?? "";
  const signature = header(headers, "webhook-signature") ?? "";
  let last: unknown;
  for (const secret of secrets) {
    try {
      const payload = new Webhook(secretKey(secret), { format: "raw" }).verify(body, {
        "webhook-id": id,
        "webhook-timestamp": timestamp,
        "webhook-signature": signature,
      });
      return { id, timestamp: Number.parseInt(timestamp, 10), payload, scheme: "standard" };
    } catch (error) {
      if (!(error instanceof StandardError)) throw error;
      last = error;
    }
  }
  throw new WebhookVerificationError(`webhook not verified: ${(last as Error).message}`, { cause: last });
}

function verifyLegacy(secrets: string[], body: string | Uint8Array, headers: WebhookHeaders): VerifiedWebhook {
  const given = header(headers, "casework-signature") ?? "";
  const fields = new Map(
    given.split(",").map((part) => {
      const at = part.indexOf("=");
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
    }),
  );
  const timestamp = Number.parseInt(fields.get("t") ?? "", 10);
  const signature = fields.get("v1") ?? "";
  if (!Number.isFinite(timestamp) || !/^[0-9a-f]{64}$/.test(signature)) {
    throw new WebhookVerificationError("webhook not verified: malformed Casework-Signature");
  }
  if (Math.abs(Date.now() / 1000 - timestamp) > TOLERANCE_SECONDS) {
    throw new WebhookVerificationError("webhook not verified: timestamp outside the tolerance");
  }
  const text = bodyText(body);
  for (const secret of secrets) {
    const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}.`).update(text).digest();
    if (timingSafeEqual(expected, Buffer.from(signature, "hex"))) {
      const id = header(headers, "idempotency-key") ?? "";
      return { id, timestamp, payload: JSON.parse(text), scheme: "legacy" };
    }
  }
  throw new WebhookVerificationError("webhook not verified: no matching Casework-Signature");
}

/**
 * Verifies a webhook Casework sent and returns its parsed body; throws
 * WebhookVerificationError otherwise (answer 400 then, and act on nothing).
 *
 * `body` is the raw request body, exactly as received: parse nothing before verifying.
 * `secret`: the endpoint's `whsec_` secret, or several (any one verifying is enough, for a
 * receiver in the middle of its own rotation). Timestamps more than 5 minutes away are refused.
 */
export function verifyWebhook<Payload = unknown>(
  secret: string | string[],
  body: string | Uint8Array,
  headers: WebhookHeaders,
  options: VerifyOptions = {},
): VerifiedWebhook<Payload> {
  const secrets = Array.isArray(secret) ? secret : [secret];
  if (secrets.length === 0 || secrets.some((one) => one.length === 0)) {
    throw new TypeError("verifyWebhook needs at least one non-empty secret");
  }
  const standard = header(headers, "webhook-signature") !== undefined;
  if (!standard && options.allowLegacy && header(headers, "casework-signature") !== undefined) {
    return verifyLegacy(secrets, body, headers) as VerifiedWebhook<Payload>;
  }
  return verifyStandard(secrets, body, headers) as VerifiedWebhook<Payload>;
}
