/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
/** Sets the due time, with the reason. */
export type Consequence =
  | 'CRITICAL'
  | 'HIGH'
  | 'LOW'
  | 'MEDIUM';

/** Where a decision stands. PROVISIONAL: it needs a second review and waits for it (not carried out); EFFECTIVE: it takes effect (it needed no second review, or was confirmed); SUPERSEDED: an override at second review or an overturn replaced it (a provisional decision that was overridden was never carried out). */
export type DecisionStatus =
  | 'EFFECTIVE'
  | 'PROVISIONAL'
  | 'SUPERSEDED';

export type ExceptionAction =
  | 'APPROVE_CORRECTION'
  | 'ATTACH_EVIDENCE'
  | 'CLOSE_EXCEPTION'
  | 'REJECT_CORRECTION'
  | 'REOPEN_EXCEPTION'
  | 'REPORT_REDRIVE_RESULT'
  | 'REQUEST_REDRIVE'
  | 'SUBMIT_CORRECTION';

export type ExceptionState =
  | 'AWAITING_APPROVAL'
  | 'CLOSED'
  | 'NEEDS_REVIEW'
  | 'REDRIVE_PENDING';

/** LEASED is a pending item under a live lease. */
export type ItemState =
  | 'DECIDED'
  | 'LEASED'
  | 'PARKED'
  | 'PENDING';

export type ItemUpdateKind =
  | 'DECIDED'
  | 'DECISION_CHANGED'
  | 'ESCALATED'
  | 'EVIDENCE_CHANGED'
  | 'EXCEPTION_CHANGED'
  /** The lease ran out, someone else claimed, or a manager revoked it. */
  | 'LEASE_LOST'
  | 'NOTED'
  /** The item passed its due time (nothing was written). */
  | 'OVERDUE'
  /** The holder gave the item back: a release, or a hold. */
  | 'RELEASED'
  | 'RESYNC'
  /** The decision made is provisional: the item went to its second-review queue (ReviewItem.awaitingSecondReview). */
  | 'SECOND_REVIEW';

export type NewItemInput = {
  /** When the item is due; else the queue's dueSeconds for its priority. A known key keeps the due time it has. */
  dueAt?: string | null | undefined;
  /** The caller's key; enqueue is idempotent on it. */
  externalKey: string;
  /** A JSON object, at most 64 KiB canonical. */
  payload: unknown;
  priority?: number | null | undefined;
  /** The integration's id of the person or company the payload is about: the unit of erasure and retention. Required on a queue with a privacy policy. */
  subjectRef?: string | null | undefined;
};

export type RaiseExceptionInput = {
  blockedStep?: string | null | undefined;
  completedSteps?: Array<string>;
  consequence: Consequence;
  /** Minimum facts as a JSON object; no credential-like keys. */
  context?: unknown;
  /** Plain language: what blocks the next step. */
  detail: string;
  /** References (URIs, document ids), never documents. */
  evidence?: Array<string>;
  reasonCode: string;
  sourceRecordId: string;
  workflow: string;
};

export type ReportRedriveResultInput = {
  detail?: string | null | undefined;
  redriveKey: string;
  /** The durable result, not an attempt. */
  succeeded: boolean;
};

export type Verdict =
  | 'APPROVE'
  | 'ESCALATE'
  | 'REJECT';

export type DecisionFieldsFragment = { id: string, queue: string, verdict: Verdict, isOverturn: boolean, reasonCode: string, reviewer: string, evidenceHash: string, decidedAt: string, status: DecisionStatus, confirmedBy: string | null, confirmedAt: string | null, isOverride: boolean, note: string | null, supersedes: { id: string } | null, item: { id: string, externalKey: string, queue: string } | null };

export type ExceptionFieldsFragment = { id: string, workflow: string, sourceRecordId: string, reasonCode: string, detail: string, consequence: Consequence, state: ExceptionState, attempts: number, recurrences: number, version: number, allowedActions: Array<ExceptionAction>, dueAt: string, createdAt: string, updatedAt: string, closedAt: string | null, item: { id: string } };

export type EnqueueItemsMutationVariables = Exact<{
  queue: string;
  items: Array<NewItemInput> | NewItemInput;
}>;


export type EnqueueItemsMutation = { enqueueItems:
    | { __typename: 'EnqueuedItems', items: Array<{ created: boolean, evidenceUpdated: boolean, droppedPaths: Array<string>, item: { id: string, queue: string, externalKey: string, priority: number, state: ItemState, evidenceHash: string, dueAt: string | null, createdAt: string } }> }
    | { __typename: 'InvalidInput', message: string, field: string | null }
    | { __typename: 'NotPermitted', message: string }
   };

export type ItemDecisionQueryVariables = Exact<{
  id: string;
}>;


export type ItemDecisionQuery = { item: { id: string, queue: string, state: ItemState, currentDecision: { id: string, queue: string, verdict: Verdict, isOverturn: boolean, reasonCode: string, reviewer: string, evidenceHash: string, decidedAt: string, status: DecisionStatus, confirmedBy: string | null, confirmedAt: string | null, isOverride: boolean, note: string | null, supersedes: { id: string } | null, item: { id: string, externalKey: string, queue: string } | null } | null } | null };

export type ItemUpdatesSubscriptionVariables = Exact<{
  itemId: string;
}>;


export type ItemUpdatesSubscription = { itemUpdates: { kind: ItemUpdateKind, item: { id: string, queue: string, state: ItemState, currentDecision: { id: string, queue: string, verdict: Verdict, isOverturn: boolean, reasonCode: string, reviewer: string, evidenceHash: string, decidedAt: string, status: DecisionStatus, confirmedBy: string | null, confirmedAt: string | null, isOverride: boolean, note: string | null, supersedes: { id: string } | null, item: { id: string, externalKey: string, queue: string } | null } | null } } };

export type DecisionEventsSubscriptionVariables = Exact<{
  queue: string;
  after?: string | null | undefined;
}>;


export type DecisionEventsSubscription = { decisionEvents: { id: string, queue: string, verdict: Verdict, isOverturn: boolean, reasonCode: string, reviewer: string, evidenceHash: string, decidedAt: string, status: DecisionStatus, confirmedBy: string | null, confirmedAt: string | null, isOverride: boolean, note: string | null, supersedes: { id: string } | null, item: { id: string, externalKey: string, queue: string } | null } };

export type RaiseExceptionMutationVariables = Exact<{
  input: RaiseExceptionInput;
}>;


export type RaiseExceptionMutation = { raiseException:
    | { __typename: 'ExceptionRaised', created: boolean, exception: { id: string, workflow: string, sourceRecordId: string, reasonCode: string, detail: string, consequence: Consequence, state: ExceptionState, attempts: number, recurrences: number, version: number, allowedActions: Array<ExceptionAction>, dueAt: string, createdAt: string, updatedAt: string, closedAt: string | null, item: { id: string } } }
    | { __typename: 'InvalidInput', message: string, field: string | null }
    | { __typename: 'NotPermitted', message: string }
   };

export type ReportRedriveResultMutationVariables = Exact<{
  input: ReportRedriveResultInput;
}>;


export type ReportRedriveResultMutation = { reportRedriveResult:
    | { __typename: 'InvalidInput', message: string, field: string | null }
    | { __typename: 'InvalidTransition', message: string, exceptionId: string, state: ExceptionState, action: ExceptionAction, allowedActions: Array<ExceptionAction> }
    | { __typename: 'NotPermitted', message: string }
    | { __typename: 'RedriveResultRecorded', alreadyReported: boolean, exception: { id: string, workflow: string, sourceRecordId: string, reasonCode: string, detail: string, consequence: Consequence, state: ExceptionState, attempts: number, recurrences: number, version: number, allowedActions: Array<ExceptionAction>, dueAt: string, createdAt: string, updatedAt: string, closedAt: string | null, item: { id: string } } }
   };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}
export const DecisionFieldsFragmentDoc = new TypedDocumentString(`
    fragment DecisionFields on Decision {
  id
  queue
  verdict
  isOverturn
  reasonCode
  reviewer
  evidenceHash
  decidedAt
  status
  confirmedBy
  confirmedAt
  isOverride
  note
  supersedes {
    id
  }
  item {
    id
    externalKey
    queue
  }
}
    `, {"fragmentName":"DecisionFields"}) as unknown as TypedDocumentString<DecisionFieldsFragment, unknown>;
export const ExceptionFieldsFragmentDoc = new TypedDocumentString(`
    fragment ExceptionFields on Exception {
  id
  workflow
  sourceRecordId
  reasonCode
  detail
  consequence
  state
  attempts
  recurrences
  version
  allowedActions
  dueAt
  createdAt
  updatedAt
  closedAt
  item {
    id
  }
}
    `, {"fragmentName":"ExceptionFields"}) as unknown as TypedDocumentString<ExceptionFieldsFragment, unknown>;
export const EnqueueItemsDocument = new TypedDocumentString(`
    mutation EnqueueItems($queue: String!, $items: [NewItemInput!]!) {
  enqueueItems(queue: $queue, items: $items) {
    __typename
    ... on EnqueuedItems {
      items {
        created
        evidenceUpdated
        droppedPaths
        item {
          id
          queue
          externalKey
          priority
          state
          evidenceHash
          dueAt
          createdAt
        }
      }
    }
    ... on NotPermitted {
      message
    }
    ... on InvalidInput {
      message
      field
    }
  }
}
    `) as unknown as TypedDocumentString<EnqueueItemsMutation, EnqueueItemsMutationVariables>;
export const ItemDecisionDocument = new TypedDocumentString(`
    query ItemDecision($id: ID!) {
  item(id: $id) {
    id
    queue
    state
    currentDecision {
      ...DecisionFields
    }
  }
}
    fragment DecisionFields on Decision {
  id
  queue
  verdict
  isOverturn
  reasonCode
  reviewer
  evidenceHash
  decidedAt
  status
  confirmedBy
  confirmedAt
  isOverride
  note
  supersedes {
    id
  }
  item {
    id
    externalKey
    queue
  }
}`) as unknown as TypedDocumentString<ItemDecisionQuery, ItemDecisionQueryVariables>;
export const ItemUpdatesDocument = new TypedDocumentString(`
    subscription ItemUpdates($itemId: ID!) {
  itemUpdates(itemId: $itemId) {
    kind
    item {
      id
      queue
      state
      currentDecision {
        ...DecisionFields
      }
    }
  }
}
    fragment DecisionFields on Decision {
  id
  queue
  verdict
  isOverturn
  reasonCode
  reviewer
  evidenceHash
  decidedAt
  status
  confirmedBy
  confirmedAt
  isOverride
  note
  supersedes {
    id
  }
  item {
    id
    externalKey
    queue
  }
}`) as unknown as TypedDocumentString<ItemUpdatesSubscription, ItemUpdatesSubscriptionVariables>;
export const DecisionEventsDocument = new TypedDocumentString(`
    subscription DecisionEvents($queue: String!, $after: ID) {
  decisionEvents(queue: $queue, after: $after) {
    ...DecisionFields
  }
}
    fragment DecisionFields on Decision {
  id
  queue
  verdict
  isOverturn
  reasonCode
  reviewer
  evidenceHash
  decidedAt
  status
  confirmedBy
  confirmedAt
  isOverride
  note
  supersedes {
    id
  }
  item {
    id
    externalKey
    queue
  }
}`) as unknown as TypedDocumentString<DecisionEventsSubscription, DecisionEventsSubscriptionVariables>;
export const RaiseExceptionDocument = new TypedDocumentString(`
    mutation RaiseException($input: RaiseExceptionInput!) {
  raiseException(input: $input) {
    __typename
    ... on ExceptionRaised {
      created
      exception {
        ...ExceptionFields
      }
    }
    ... on NotPermitted {
      message
    }
    ... on InvalidInput {
      message
      field
    }
  }
}
    fragment ExceptionFields on Exception {
  id
  workflow
  sourceRecordId
  reasonCode
  detail
  consequence
  state
  attempts
  recurrences
  version
  allowedActions
  dueAt
  createdAt
  updatedAt
  closedAt
  item {
    id
  }
}`) as unknown as TypedDocumentString<RaiseExceptionMutation, RaiseExceptionMutationVariables>;
export const ReportRedriveResultDocument = new TypedDocumentString(`
    mutation ReportRedriveResult($input: ReportRedriveResultInput!) {
  reportRedriveResult(input: $input) {
    __typename
    ... on RedriveResultRecorded {
      alreadyReported
      exception {
        ...ExceptionFields
      }
    }
    ... on InvalidTransition {
      message
      exceptionId
      state
      action
      allowedActions
    }
    ... on NotPermitted {
      message
    }
    ... on InvalidInput {
      message
      field
    }
  }
}
    fragment ExceptionFields on Exception {
  id
  workflow
  sourceRecordId
  reasonCode
  detail
  consequence
  state
  attempts
  recurrences
  version
  allowedActions
  dueAt
  createdAt
  updatedAt
  closedAt
  item {
    id
  }
}`) as unknown as TypedDocumentString<ReportRedriveResultMutation, ReportRedriveResultMutationVariables>;