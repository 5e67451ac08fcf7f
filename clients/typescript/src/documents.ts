// Every operation the client sends, as typed documents: GraphQL Code Generator reads this
// file and writes their types into ./gql/ (`npm run codegen`).
import { graphql } from "./gql/index.js";

export const DecisionFieldsFragment = graphql(`
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
`);

export const ExceptionFieldsFragment = graphql(`
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
`);

export const EnqueueItemsDocument = graphql(`
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
`);

export const ItemDecisionDocument = graphql(`
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
`);

export const ItemUpdatesDocument = graphql(`
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
`);

export const DecisionEventsDocument = graphql(`
  subscription DecisionEvents($queue: String!, $after: ID) {
    decisionEvents(queue: $queue, after: $after) {
      ...DecisionFields
    }
  }
`);

export const RaiseExceptionDocument = graphql(`
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
`);

export const ReportRedriveResultDocument = graphql(`
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
`);
