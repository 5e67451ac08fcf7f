export { CaseworkClient, streamErrorOf } from "./client.js";
export type {
  CaseworkClientOptions,
  Decision,
  DecisionEventsOptions,
  Document,
  EnqueuedItem,
  ExceptionRaised,
  NewItemInput,
  RaiseExceptionInput,
  ReconnectOptions,
  RedriveResultRecorded,
  ReportRedriveResultInput,
  WaitOptions,
} from "./client.js";
export { type CursorStore, FileCursorStore, MemoryCursorStore } from "./cursor.js";
export * from "./errors.js";
export { secretKey, type VerifiedWebhook, type VerifyOptions, verifyWebhook, type WebhookHeaders } from "./webhooks.js";
export * as documents from "./documents.js";
export type * as types from "./gql/graphql.js";
