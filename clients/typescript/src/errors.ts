// Typed errors. Expected refusals are members of a mutation's result union; the helpers
// throw them as RefusedError subclasses carrying the member. What arrives in `errors[]`
// (or as an HTTP status) is a RequestError with its `extensions.code`.

/** Every error this client throws. */
export class CaseworkError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A result-union member other than the success: the server refused, as designed. */
export class RefusedError<Member extends { __typename: string; message: string }> extends CaseworkError {
  readonly typename: Member["__typename"];
  readonly member: Member;
  constructor(member: Member) {
    super(`${member.__typename}: ${member.message}`);
    this.typename = member.__typename;
    this.member = member;
  }
}

/** NotPermitted: the token may not do this, or the thing is outside its queues. */
export class NotPermittedError extends RefusedError<{ __typename: "NotPermitted"; message: string }> {}

/** InvalidInput: `field` names the input at fault, when there is one. */
export class InvalidInputError extends RefusedError<{
  __typename: "InvalidInput";
  message: string;
  field: string | null;
}> {
  get field(): string | null {
    return this.member.field;
  }
}

/** NotFound: nothing with that id that the token covers. */
export class NotFoundError extends RefusedError<{ __typename: "NotFound"; message: string; id: string }> {
  get id(): string {
    return this.member.id;
  }
}

/** InvalidTransition: the exception is not in a state that allows the action. */
export class InvalidTransitionError extends RefusedError<{
  __typename: "InvalidTransition";
  message: string;
  exceptionId: string;
  state: string;
  action: string;
  allowedActions: string[];
}> {}

/** Any other union member (a newer server may add some): read `typename` and `member`. */
export class OtherRefusalError extends RefusedError<{ __typename: string; message: string }> {}

/** The codes of `errors[].extensions.code`. */
export type ErrorCode =
  | "UNAUTHENTICATED"
  | "FORBIDDEN"
  | "BAD_REQUEST"
  | "LIMIT_EXCEEDED"
  | "UNAVAILABLE"
  | "INTERNAL";

export interface FormattedError {
  message: string;
  extensions?: { code?: string; [key: string]: unknown };
  path?: ReadonlyArray<string | number>;
}

/** The request failed as a whole: an HTTP status, or `errors[]` instead of data. */
export class RequestError extends CaseworkError {
  readonly code: ErrorCode | string | undefined;
  readonly status: number | undefined;
  readonly errors: FormattedError[];
  /** What a 503 asked the client to wait (Retry-After), in seconds. */
  readonly retryAfterSeconds: number | undefined;
  constructor(
    message: string,
    details: { code?: string; status?: number; errors?: FormattedError[]; retryAfterSeconds?: number },
  ) {
    super(message);
    this.code = details.code;
    this.status = details.status;
    this.errors = details.errors ?? [];
    this.retryAfterSeconds = details.retryAfterSeconds;
  }

  /** Worth trying again later: the database or the service is unavailable. */
  get retryable(): boolean {
    return this.code === "UNAVAILABLE" || (this.status !== undefined && this.status >= 502 && this.status <= 504);
  }
}

/** No valid token (missing, unknown, revoked or expired): sign in again. */
export class UnauthenticatedError extends RequestError {}

/** The token is valid but may not do this. */
export class ForbiddenError extends RequestError {}

/** The service could not be reached at all (connection refused, reset, timed out). */
export class ConnectionError extends CaseworkError {}

/** waitForDecision's deadline passed with no decision: never an approval. */
export class DecisionTimeoutError extends CaseworkError {
  readonly itemId: string;
  constructor(itemId: string, timeoutMs: number) {
    super(`no decision on item ${itemId} within ${timeoutMs} ms`);
    this.itemId = itemId;
  }
}

/** A webhook whose signature, timestamp or headers do not verify: answer 400, act on nothing. */
export class WebhookVerificationError extends CaseworkError {}

/** A RequestError for a GraphQL `errors[]` (HTTP or websocket), typed by its first code. */
export function requestErrorOf(errors: FormattedError[], status?: number, retryAfterSeconds?: number): RequestError {
  const code = errors.find((error) => typeof error.extensions?.code === "string")?.extensions?.code;
  const message = errors.map((error) => error.message).join("; ") || `HTTP ${status}`;
  const details = { code, status, errors, retryAfterSeconds };
  if (code === "UNAUTHENTICATED" || status === 401) return new UnauthenticatedError(message, details);
  if (code === "FORBIDDEN" || status === 403) return new ForbiddenError(message, details);
  return new RequestError(message, details);
}

type Member = { __typename: string; message?: string };

/** The refusal for a union member (any member but the success). */
export function refusalOf(member: Member): RefusedError<{ __typename: string; message: string }> {
  const known = { ...member, message: member.message ?? member.__typename } as never;
  switch (member.__typename) {
    case "NotPermitted":
      return new NotPermittedError(known);
    case "InvalidInput":
      return new InvalidInputError(known);
    case "NotFound":
      return new NotFoundError(known);
    case "InvalidTransition":
      return new InvalidTransitionError(known);
    default:
      return new OtherRefusalError(known);
  }
}

/** The success member of a result union, or its refusal thrown. */
export function successOf<Result extends Member, Success extends Result["__typename"]>(
  result: Result,
  success: Success,
): Extract<Result, { __typename: Success }> {
  if (result.__typename === success) return result as Extract<Result, { __typename: Success }>;
  throw refusalOf(result);
}
