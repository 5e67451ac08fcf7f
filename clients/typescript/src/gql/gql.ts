/* eslint-disable */
import * as types from './graphql.js';



/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  fragment DecisionFields on Decision {\n    id\n    queue\n    verdict\n    isOverturn\n    reasonCode\n    reviewer\n    evidenceHash\n    decidedAt\n    status\n    confirmedBy\n    confirmedAt\n    isOverride\n    note\n    supersedes {\n      id\n    }\n    item {\n      id\n      externalKey\n      queue\n    }\n  }\n": typeof types.DecisionFieldsFragmentDoc,
    "\n  fragment ExceptionFields on Exception {\n    id\n    workflow\n    sourceRecordId\n    reasonCode\n    detail\n    consequence\n    state\n    attempts\n    recurrences\n    version\n    allowedActions\n    dueAt\n    createdAt\n    updatedAt\n    closedAt\n    item {\n      id\n    }\n  }\n": typeof types.ExceptionFieldsFragmentDoc,
    "\n  mutation EnqueueItems($queue: String!, $items: [NewItemInput!]!) {\n    enqueueItems(queue: $queue, items: $items) {\n      __typename\n      ... on EnqueuedItems {\n        items {\n          created\n          evidenceUpdated\n          droppedPaths\n          item {\n            id\n            queue\n            externalKey\n            priority\n            state\n            evidenceHash\n            dueAt\n            createdAt\n          }\n        }\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n": typeof types.EnqueueItemsDocument,
    "\n  query ItemDecision($id: ID!) {\n    item(id: $id) {\n      id\n      queue\n      state\n      currentDecision {\n        ...DecisionFields\n      }\n    }\n  }\n": typeof types.ItemDecisionDocument,
    "\n  subscription ItemUpdates($itemId: ID!) {\n    itemUpdates(itemId: $itemId) {\n      kind\n      item {\n        id\n        queue\n        state\n        currentDecision {\n          ...DecisionFields\n        }\n      }\n    }\n  }\n": typeof types.ItemUpdatesDocument,
    "\n  subscription DecisionEvents($queue: String!, $after: ID) {\n    decisionEvents(queue: $queue, after: $after) {\n      ...DecisionFields\n    }\n  }\n": typeof types.DecisionEventsDocument,
    "\n  mutation RaiseException($input: RaiseExceptionInput!) {\n    raiseException(input: $input) {\n      __typename\n      ... on ExceptionRaised {\n        created\n        exception {\n          ...ExceptionFields\n        }\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n": typeof types.RaiseExceptionDocument,
    "\n  mutation ReportRedriveResult($input: ReportRedriveResultInput!) {\n    reportRedriveResult(input: $input) {\n      __typename\n      ... on RedriveResultRecorded {\n        alreadyReported\n        exception {\n          ...ExceptionFields\n        }\n      }\n      ... on InvalidTransition {\n        message\n        exceptionId\n        state\n        action\n        allowedActions\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n": typeof types.ReportRedriveResultDocument,
};
const documents: Documents = {
    "\n  fragment DecisionFields on Decision {\n    id\n    queue\n    verdict\n    isOverturn\n    reasonCode\n    reviewer\n    evidenceHash\n    decidedAt\n    status\n    confirmedBy\n    confirmedAt\n    isOverride\n    note\n    supersedes {\n      id\n    }\n    item {\n      id\n      externalKey\n      queue\n    }\n  }\n": types.DecisionFieldsFragmentDoc,
    "\n  fragment ExceptionFields on Exception {\n    id\n    workflow\n    sourceRecordId\n    reasonCode\n    detail\n    consequence\n    state\n    attempts\n    recurrences\n    version\n    allowedActions\n    dueAt\n    createdAt\n    updatedAt\n    closedAt\n    item {\n      id\n    }\n  }\n": types.ExceptionFieldsFragmentDoc,
    "\n  mutation EnqueueItems($queue: String!, $items: [NewItemInput!]!) {\n    enqueueItems(queue: $queue, items: $items) {\n      __typename\n      ... on EnqueuedItems {\n        items {\n          created\n          evidenceUpdated\n          droppedPaths\n          item {\n            id\n            queue\n            externalKey\n            priority\n            state\n            evidenceHash\n            dueAt\n            createdAt\n          }\n        }\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n": types.EnqueueItemsDocument,
    "\n  query ItemDecision($id: ID!) {\n    item(id: $id) {\n      id\n      queue\n      state\n      currentDecision {\n        ...DecisionFields\n      }\n    }\n  }\n": types.ItemDecisionDocument,
    "\n  subscription ItemUpdates($itemId: ID!) {\n    itemUpdates(itemId: $itemId) {\n      kind\n      item {\n        id\n        queue\n        state\n        currentDecision {\n          ...DecisionFields\n        }\n      }\n    }\n  }\n": types.ItemUpdatesDocument,
    "\n  subscription DecisionEvents($queue: String!, $after: ID) {\n    decisionEvents(queue: $queue, after: $after) {\n      ...DecisionFields\n    }\n  }\n": types.DecisionEventsDocument,
    "\n  mutation RaiseException($input: RaiseExceptionInput!) {\n    raiseException(input: $input) {\n      __typename\n      ... on ExceptionRaised {\n        created\n        exception {\n          ...ExceptionFields\n        }\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n": types.RaiseExceptionDocument,
    "\n  mutation ReportRedriveResult($input: ReportRedriveResultInput!) {\n    reportRedriveResult(input: $input) {\n      __typename\n      ... on RedriveResultRecorded {\n        alreadyReported\n        exception {\n          ...ExceptionFields\n        }\n      }\n      ... on InvalidTransition {\n        message\n        exceptionId\n        state\n        action\n        allowedActions\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n": types.ReportRedriveResultDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment DecisionFields on Decision {\n    id\n    queue\n    verdict\n    isOverturn\n    reasonCode\n    reviewer\n    evidenceHash\n    decidedAt\n    status\n    confirmedBy\n    confirmedAt\n    isOverride\n    note\n    supersedes {\n      id\n    }\n    item {\n      id\n      externalKey\n      queue\n    }\n  }\n"): typeof import('./graphql.js').DecisionFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ExceptionFields on Exception {\n    id\n    workflow\n    sourceRecordId\n    reasonCode\n    detail\n    consequence\n    state\n    attempts\n    recurrences\n    version\n    allowedActions\n    dueAt\n    createdAt\n    updatedAt\n    closedAt\n    item {\n      id\n    }\n  }\n"): typeof import('./graphql.js').ExceptionFieldsFragmentDoc;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation EnqueueItems($queue: String!, $items: [NewItemInput!]!) {\n    enqueueItems(queue: $queue, items: $items) {\n      __typename\n      ... on EnqueuedItems {\n        items {\n          created\n          evidenceUpdated\n          droppedPaths\n          item {\n            id\n            queue\n            externalKey\n            priority\n            state\n            evidenceHash\n            dueAt\n            createdAt\n          }\n        }\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n"): typeof import('./graphql.js').EnqueueItemsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ItemDecision($id: ID!) {\n    item(id: $id) {\n      id\n      queue\n      state\n      currentDecision {\n        ...DecisionFields\n      }\n    }\n  }\n"): typeof import('./graphql.js').ItemDecisionDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription ItemUpdates($itemId: ID!) {\n    itemUpdates(itemId: $itemId) {\n      kind\n      item {\n        id\n        queue\n        state\n        currentDecision {\n          ...DecisionFields\n        }\n      }\n    }\n  }\n"): typeof import('./graphql.js').ItemUpdatesDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription DecisionEvents($queue: String!, $after: ID) {\n    decisionEvents(queue: $queue, after: $after) {\n      ...DecisionFields\n    }\n  }\n"): typeof import('./graphql.js').DecisionEventsDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RaiseException($input: RaiseExceptionInput!) {\n    raiseException(input: $input) {\n      __typename\n      ... on ExceptionRaised {\n        created\n        exception {\n          ...ExceptionFields\n        }\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n"): typeof import('./graphql.js').RaiseExceptionDocument;
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ReportRedriveResult($input: ReportRedriveResultInput!) {\n    reportRedriveResult(input: $input) {\n      __typename\n      ... on RedriveResultRecorded {\n        alreadyReported\n        exception {\n          ...ExceptionFields\n        }\n      }\n      ... on InvalidTransition {\n        message\n        exceptionId\n        state\n        action\n        allowedActions\n      }\n      ... on NotPermitted {\n        message\n      }\n      ... on InvalidInput {\n        message\n        field\n      }\n    }\n  }\n"): typeof import('./graphql.js').ReportRedriveResultDocument;


export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}
