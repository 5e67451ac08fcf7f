// Every GraphQL document the console sends. Fixed texts, no introspection: the console works
// against a production-mode server, and each document stays inside the server's limits
// (depth 10, 2,000 tokens, a cost of 10,000 rows; a `first` is written into the text).

export const ME = `query Me { me { user role queues activeRole displayName grants { role queues rules } authentication { kind } } }`;

export const QUEUES = `
query Queues {
  queues {
    name holderRole leaseTtlSeconds
    stats { pending leased oldestPendingAgeSeconds }
  }
}`;

export const QUEUE = `
query Queue($name: String!) {
  queue(name: $name) {
    name holderRole leaseTtlSeconds escalationQueue maxLeasesPerReviewer
    stats { pending leased oldestPendingAgeSeconds held assigned overdue }
    reasonCodes { code label verdicts requiresNote }
    holdReasons { code label }
  }
}`;

// A decision as the console lists it: its status (provisional, effective, superseded), who
// confirmed it, and a QA check's result (decisions.js).
const DECISION_FIELDS = `
  id queue verdict isOverturn reasonCode note reviewer decidedAt evidenceHash
  status confirmedBy confirmedAt sampledForQa
  qaResult { agrees reasonCode note reviewer recordedAt }
`;

// awaitingSecondReview: on an item in a second-review queue, the provisional decision to
// confirm or override; qaOf: on a QA copy, the decision under check.
const ITEM_FIELDS = `
  id queue externalKey priority payload evidenceHash leaseCount abandonCount escalationCount
  createdAt decidedAt state dueAt overdue
  lease { owner expiresAt }
  hold { until reason }
  assignment { reviewer until }
  decisions { ${DECISION_FIELDS} }
  awaitingSecondReview { ${DECISION_FIELDS} }
  qaOf { ${DECISION_FIELDS} item { id externalKey } }
  exception { id workflow sourceRecordId reasonCode state }
  fields { path class state }
`;

// One field of a policy item, revealed with a reason (protected.js).
export const REVEAL_FIELD = `
mutation RevealField($input: RevealFieldInput!) {
  revealField(input: $input) {
    __typename
    ... on RevealedField { itemId path value revealedAt }
    ... on InvalidInput { field message }
    ... on Error { message }
  }
}`;

// One item as its own page shows it (anyone whose token covers its queue).
export const ITEM = `
query Item($id: ID!) {
  item(id: $id) { ${ITEM_FIELDS} }
}`;

export const CLAIM_NEXT = `
mutation ClaimNext($queue: String!) {
  claimNext(queue: $queue) {
    __typename
    ... on Claim { leaseToken leaseExpiresAt evidenceHash item { ${ITEM_FIELDS} } }
    ... on LeaseLimitReached { limit held { leaseToken leaseExpiresAt item { ${ITEM_FIELDS} } } }
    ... on Error { message }
  }
}`;

// The caller's live leases with their tokens: a reloaded tab takes its work up again.
export const MY_LEASES = `
query MyLeases {
  me { user leases { leaseToken leaseExpiresAt item { ${ITEM_FIELDS} } } }
}`;

// What a console re-reads after a resync or an update: is the lease still mine?
export const ITEM_STATE = `
query ItemState($id: ID!) {
  item(id: $id) {
    id state evidenceHash lease { owner expiresAt } decisions { reviewer verdict status confirmedBy } exception { id state }
  }
}`;

// The claim controls (issue 14). Each answers a union whose refusals refusals.js words.
export const HOLD_ITEM = `
mutation HoldItem($input: HoldItemInput!) {
  holdItem(input: $input) {
    __typename
    ... on ItemHeld { item { id hold { until reason } } }
    ... on InvalidHoldReason { code }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

export const RESUME_ITEM = `
mutation ResumeItem($input: ResumeItemInput!) {
  resumeItem(input: $input) {
    __typename
    ... on ItemNotWaiting { state }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

export const ASSIGN_ITEM = `
mutation AssignItem($input: AssignItemInput!) {
  assignItem(input: $input) {
    __typename
    ... on ItemAssigned { item { id assignment { reviewer until } } }
    ... on ItemNotWaiting { state }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

export const UNASSIGN_ITEM = `
mutation UnassignItem($input: UnassignItemInput!) {
  unassignItem(input: $input) {
    __typename
    ... on ItemNotWaiting { state }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

export const REVOKE_LEASE = `
mutation RevokeLease($input: RevokeLeaseInput!) {
  revokeLease(input: $input) {
    __typename
    ... on LeaseRevoked { owner }
    ... on ItemNotWaiting { state }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

export const RENEW_LEASE = `
mutation RenewLease($itemId: ID!, $leaseToken: String!) {
  renewLease(itemId: $itemId, leaseToken: $leaseToken) {
    __typename
    ... on LeaseRenewed { leaseExpiresAt }
    ... on Error { message }
  }
}`;

export const RELEASE_LEASE = `
mutation ReleaseLease($itemId: ID!, $leaseToken: String!) {
  releaseLease(itemId: $itemId, leaseToken: $leaseToken) {
    __typename
    ... on Error { message }
  }
}`;

// A queue or workflow that asks for a recent sign-in refuses an older one with this member
// (stepup.js): how recent, which authentication context, and when the person last signed in.
const REAUTH = `... on ReauthenticationRequired { requiredWithinSeconds acr authenticatedAt }`;

export const SUBMIT_DECISION = `
mutation SubmitDecision($input: SubmitDecisionInput!) {
  submitDecision(input: $input) {
    __typename
    ... on DecisionRecorded { replay decision { id verdict reasonCode note reviewer decidedAt status } }
    ... on StaleLease { decidedUnderThisLease decisionId }
    ... on EvidenceChanged { currentEvidenceHash }
    ... on InvalidReasonCode { code verdict }
    ... on InvalidInput { field }
    ${REAUTH}
    ... on Error { message }
  }
}`;

// A second review (issue 16): confirm the provisional decision, or override it with a new
// one. Both are fenced by the second reviewer's lease and pinned to the evidence hash.
export const CONFIRM_DECISION = `
mutation ConfirmDecision($input: ConfirmDecisionInput!) {
  confirmDecision(input: $input) {
    __typename
    ... on DecisionRecorded { replay decision { ${DECISION_FIELDS} } }
    ... on StaleLease { decidedUnderThisLease }
    ... on EvidenceChanged { currentEvidenceHash }
    ... on InvalidInput { field }
    ${REAUTH}
    ... on Error { message }
  }
}`;

export const OVERRIDE_DECISION = `
mutation OverrideDecision($input: OverrideDecisionInput!) {
  overrideDecision(input: $input) {
    __typename
    ... on DecisionRecorded { replay decision { ${DECISION_FIELDS} } }
    ... on StaleLease { decidedUnderThisLease }
    ... on EvidenceChanged { currentEvidenceHash }
    ... on InvalidReasonCode { code verdict }
    ... on InvalidInput { field }
    ${REAUTH}
    ... on Error { message }
  }
}`;

// A QA check of a sampled decision: agree or disagree, with a reason of the QA queue.
export const RECORD_QA_RESULT = `
mutation RecordQaResult($input: RecordQaResultInput!) {
  recordQaResult(input: $input) {
    __typename
    ... on QaResultRecorded { result { agrees reasonCode note reviewer recordedAt } }
    ... on StaleLease { decidedUnderThisLease }
    ... on InvalidReasonCode { code verdict }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

// A queue's reason catalogue: the labels of the codes a decision names, and where its QA
// checks are made, whose catalogue labels a QA result's code (decisions.js).
export const REASON_CODES = `
query ReasonCodes($name: String!) {
  queue(name: $name) { name qaQueue reasonCodes { code label verdicts requiresNote } }
}`;

// An item's timeline, oldest first, a page at a time (activity.js).
export const ITEM_EVENTS = `
query ItemEvents($id: ID!, $after: String) {
  item(id: $id) {
    id
    events(first: 50, after: $after) {
      edges {
        cursor
        node {
          kind at queue actor actorRole body until fromQueue toQueue recordedAt holdReason assignee
          notificationRule notificationEvent notificationChannel notificationState notificationSentAt
          lease { id owner startedAt }
          decision { id verdict isOverturn reasonCode reviewer status confirmedBy qaResult { agrees reasonCode reviewer } }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}`;

export const ADD_NOTE = `
mutation AddNote($input: AddNoteInput!) {
  addNote(input: $input) {
    __typename
    ... on NoteAdded { event { kind at actor body } }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

export const QUEUE_BACKLOG = `
subscription QueueBacklog($queue: String!) {
  queueBacklog(queue: $queue) { queue pending leased oldestPendingAgeSeconds resync }
}`;

export const ITEM_UPDATES = `
subscription ItemUpdates($itemId: ID!, $leaseExpiresAt: DateTime) {
  itemUpdates(itemId: $itemId, leaseExpiresAt: $leaseExpiresAt) {
    kind
    item {
      id queue state evidenceHash dueAt overdue lease { owner expiresAt } decisions { reviewer verdict status confirmedBy }
      hold { until reason } assignment { reviewer until }
    }
  }
}`;

// ---- Exceptions -------------------------------------------------------------------------

export const WORKFLOWS = `
query Workflows {
  workflows {
    name approvalQueue redriveVia redriveTarget redriveMaxAttempts redriveTimeoutSeconds
    reasons {
      code label ownerRole escalationOwnerRole allowedActions
      dueSeconds { low medium high critical }
    }
  }
}`;

const EXCEPTION_ROW = `
  id workflow sourceRecordId reasonCode reasonLabel detail consequence state closure
  ownerRole owner dueAt overdue attempts recurrences reopenCount version
  createdAt updatedAt closedAt
`;

export { EXCEPTION_ROW };

// Newest activity first, as the console shows them: the server orders and pages them, so
// the first pages are the newest, however many there are.
export const EXCEPTIONS = `
query Exceptions($filter: ExceptionFilter, $after: String) {
  exceptions(filter: $filter, first: 200, after: $after, order: NEWEST_FIRST) {
    edges { node { ${EXCEPTION_ROW} } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export const EXCEPTION = `
query Exception($id: ID!) {
  exception(id: $id) {
    ${EXCEPTION_ROW}
    blockedStep completedSteps staleSteps evidence context escalationOwnerRole escalatedAt
    lastRejection allowedActions
    item { id queue state lease { owner expiresAt } }
    corrections { version reasonCode changes staleSteps evidence note correctedBy submittedAt }
    redrives {
      key version resumeAfter staleSteps requestedBy requestedAt succeeded resultDetail
      reportedBy reportedAt deliveryState deliveryAttempts deliveredAt
    }
    events {
      id kind actor actorRole fromState toState version evidence detail at redriveKey
    }
  }
}`;

export const EXCEPTION_EVENTS = `
subscription ExceptionEvents($workflow: String!) {
  exceptionEvents(workflow: $workflow) {
    id exceptionId kind actor at
    exception { ${EXCEPTION_ROW} }
  }
}`;

const EXCEPTION_RESULT = `
    __typename
    ... on ExceptionUpdated { exception { id state version } }
    ... on InvalidTransition { state action allowedActions }
    ... on InvalidInput { field }
    ... on Error { message }
`;

export const ATTACH_EVIDENCE = `
mutation AttachEvidence($input: AttachEvidenceInput!) {
  attachEvidence(input: $input) { ${EXCEPTION_RESULT} }
}`;

export const SUBMIT_CORRECTION = `
mutation SubmitCorrection($input: SubmitCorrectionInput!) {
  submitCorrection(input: $input) { ${EXCEPTION_RESULT} }
}`;

export const APPROVE_CORRECTION = `
mutation ApproveCorrection($input: ApproveCorrectionInput!) {
  approveCorrection(input: $input) { ${EXCEPTION_RESULT} ${REAUTH} }
}`;

export const REJECT_CORRECTION = `
mutation RejectCorrection($input: RejectCorrectionInput!) {
  rejectCorrection(input: $input) { ${EXCEPTION_RESULT} }
}`;

export const CLOSE_EXCEPTION = `
mutation CloseException($input: CloseExceptionInput!) {
  closeException(input: $input) { ${EXCEPTION_RESULT} }
}`;

export const REOPEN_EXCEPTION = `
mutation ReopenException($input: ReopenExceptionInput!) {
  reopenException(input: $input) { ${EXCEPTION_RESULT} }
}`;

export const REQUEST_REDRIVE = `
mutation RequestRedrive($input: RequestRedriveInput!) {
  requestRedrive(input: $input) {
    __typename
    ... on RedriveQueued { redriveKey exception { id state } }
    ... on AlreadyQueued { redriveKey }
    ... on InvalidTransition { state action allowedActions }
    ... on InvalidInput { field }
    ... on Error { message }
  }
}`;

// ---- Manager ----------------------------------------------------------------------------
// One operation per panel of a manager page (manager.js); panels that share one share its
// read. The measures' window is the API's default (7 days), written out so that the page
// can say which window it shows.

export const MANAGER_OVERVIEW = `
query ManagerOverview {
  queues { name holderRole stats { pending leased oldestPendingAgeSeconds failedApplications } }
  workflows { name approvalQueue }
}`;

export const QUEUE_STATS = `
query QueueStats($name: String!) {
  queue(name: $name) {
    name
    stats {
      pending leased held assigned overdue oldestPendingAgeSeconds unappliedDecisions
      unappliedOlderThanThreshold oldestUnappliedAgeSeconds failedApplications
    }
  }
}`;

export const QUEUE_SETTINGS = `
query QueueSettings($name: String!) {
  queue(name: $name) {
    name holderRole leaseTtlSeconds maxAbandons escalationQueue escalationPriorityBoost
    effectKind effectTarget effectMaxAttempts effectTimeoutSeconds
    secondReview { verdicts minPriority queue } qaSampleRate qaQueue
    reasonCodes { code label verdicts requiresNote }
  }
}`;

const PERCENTILES = `samples p50 p90 p99 max`;
const CAPACITY = `
  arrivalsPerDay handlingMinutesMean demandMinutesPerDay backlog backlogMinutesPerDay
  availableMinutesPerDay headroomMinutesPerDay enough
`;

// QA sampling's figures (issue 16): the agreement rate with its sample counts, the overturn
// rate beside it, and the same by reason code and by reviewer.
const QUALITY_COUNTS = `decided sampled checked agreed agreementRate overturned overturnRate`;
const QUALITY = `
  ${QUALITY_COUNTS}
  byReasonCode { key ${QUALITY_COUNTS} }
  byReviewer { key ${QUALITY_COUNTS} }
`;

// $minutes null: the queue's own reviewerMinutesPerDay setting, if it has one.
export const QUEUE_MEASURES = `
query QueueMeasures($name: String!, $since: Int! = 604800, $minutes: Float) {
  queue(name: $name) {
    name leaseTtlSeconds reviewerMinutesPerDay reasonCodes { code label }
    measures(sinceSeconds: $since) {
      sinceSeconds arrivals decided escalated overturned backlog
      leaseCountAtDecision { leaseCount items }
      leaseCountPending { leaseCount items }
      lapsedLeaseShare lapsedLeases releasedLeases
      handlingSeconds { ${PERCENTILES} }
      timeToDecisionSeconds { ${PERCENTILES} }
      recommendedLeaseTtlSeconds leaseCutOffShare leaseTtlAdvice
      reasons { code verdict count share }
      reviewers { reviewer decided overturned lapsedLeases handlingSeconds { ${PERCENTILES} } }
      capacity(availableReviewerMinutesPerDay: $minutes) { ${CAPACITY} }
      quality { ${QUALITY} }
    }
  }
}`;

// Workflow.measures: managers and admins only (a reviewer's token is refused FORBIDDEN).
export const WORKFLOW_MEASURES = `
query WorkflowMeasures($name: String!, $since: Int = 604800, $minutes: Float, $approverMinutes: Float) {
  workflow(name: $name) {
    name reviewerMinutesPerDay approverMinutesPerDay reasons { code label }
    measures(sinceSeconds: $since) {
      sinceSeconds open unclaimedNew unclaimedOverdue raised arrivalsPerDay
      ageByReason { reasonCode consequence open oldestAgeSeconds p50AgeSeconds }
      repeats { reasonCode raised recurrences sourcesWithRepeats repeatShare }
      redrives { requested succeeded failed successRate }
      closures { corrected rejected duplicate obsolete total }
      reopened reopenRate
      approvalSeconds { ${PERCENTILES} }
      handlingSeconds { ${PERCENTILES} }
      approverHandlingSeconds { ${PERCENTILES} }
      capacity(availableReviewerMinutesPerDay: $minutes) { ${CAPACITY} }
      approvalCapacity(availableApproverMinutesPerDay: $approverMinutes) { ${CAPACITY} }
    }
  }
}`;

// ---- A queue's waiting items and a manager's bulk actions (bulk.js) -----------------------

const WAITING_ITEM = `
  id externalKey priority createdAt state dueAt overdue
  lease { owner expiresAt } hold { until reason } assignment { reviewer until }
`;

// The oldest 200 of each: pending (held and assigned among them) and leased.
export const QUEUE_WAITING = `
query QueueWaiting($name: String!) {
  queues { name }
  queue(name: $name) {
    name holdReasons { code label }
    pending: items(state: PENDING, first: 200) { edges { node { ${WAITING_ITEM} } } pageInfo { hasNextPage } }
    leased: items(state: LEASED, first: 200) { edges { node { ${WAITING_ITEM} } } pageInfo { hasNextPage } }
  }
}`;

const BULK_RESULT = `
    __typename
    ... on BulkApplied {
      more
      changed { id externalKey }
      skipped { reason leaseOwner item { id externalKey state } }
    }
    ... on InvalidHoldReason { code }
    ... on InvalidInput { field }
    ... on Error { message }
`;

export const BULK_RELEASE = `
mutation BulkRelease($input: BulkReleaseInput!) { bulkRelease(input: $input) { ${BULK_RESULT} } }`;

export const BULK_ASSIGN = `
mutation BulkAssign($input: BulkAssignInput!) { bulkAssign(input: $input) { ${BULK_RESULT} } }`;

export const BULK_MOVE = `
mutation BulkMove($input: BulkMoveInput!) { bulkMove(input: $input) { ${BULK_RESULT} } }`;

export const BULK_HOLD = `
mutation BulkHold($input: BulkHoldInput!) { bulkHold(input: $input) { ${BULK_RESULT} } }`;

// ---- Finding cases (search.js, searchbox.js) ---------------------------------------------

// The header's search box: a number is first tried as an item's id, then as a key.
export const FIND_ITEM = `
query FindItem($id: ID!) { item(id: $id) { id } }`;

export const ITEM_BY_EXTERNAL_KEY = `
query ItemByExternalKey($externalKey: String!) {
  itemByExternalKey(externalKey: $externalKey) {
    __typename
    ... on ReviewItem { id queue externalKey }
    ... on AmbiguousExternalKey { message externalKey queues }
  }
}`;

export const SEARCH_QUEUES = `query SearchQueues { queues { name } }`;

// The decisions, for the current one as the search's filters read it: the latest not
// superseded, provisional ones included (ReviewItem.currentDecision leaves those out).
const SEARCH_ITEM_ROW = `
  id queue externalKey state priority createdAt updatedAt overdue
  hold { until } assignment { reviewer }
  decisions { id verdict isOverturn reasonCode reviewer decidedAt status }
`;

// One page of a search, by keyset: the page size is written into the text (the server's
// cost bound counts a variable `first` as its maximum).
export const SEARCH_ITEMS = `
query SearchItems($filter: ItemSearch!, $after: String) {
  items(filter: $filter, first: 50, after: $after) {
    __typename
    ... on ItemConnection { edges { node { ${SEARCH_ITEM_ROW} } } pageInfo { hasNextPage endCursor } }
    ... on InvalidInput { field message }
  }
}`;

export const SEARCH_DECISIONS = `
query SearchDecisions($filter: DecisionSearch!, $after: String) {
  decisions(filter: $filter, first: 50, after: $after) {
    __typename
    ... on DecisionConnection {
      edges { node { id queue verdict isOverturn reasonCode reviewer decidedAt status confirmedBy item { id externalKey } } }
      pageInfo { hasNextPage endCursor }
    }
    ... on InvalidInput { field message }
  }
}`;
