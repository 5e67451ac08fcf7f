"""casework-client: a typed client for Casework's GraphQL API.

`CaseworkClient` holds the helpers (enqueue_items, wait_for_decision, decision_events,
raise_exception, report_redrive_result) and `.graphql`, the client generated from the
repository's schema.graphql with ariadne-codegen (every operation of queries.graphql).
`verify_webhook` checks a webhook before its body is trusted.
"""

from casework_client.client import (
    CaseworkClient,
    DecisionHandler,
    EnqueuedItem,
    ExceptionRaised,
    RedriveResultRecorded,
)
from casework_client.cursors import CursorStore, FileCursorStore, MemoryCursorStore
from casework_client.errors import (
    ERRORS,
    CaseworkError,
    InvalidInputError,
    InvalidTransitionError,
    NotFoundError,
    NotPermittedError,
    RequestError,
    ResultError,
    WaitTimeout,
    WebhookVerificationError,
    raise_for_result,
)
from casework_client.generated import (
    Consequence,
    DecisionFields,
    DecisionStatus,
    ItemState,
    NewItemInput,
    Verdict,
)
from casework_client.webhooks import verify_webhook

Decision = DecisionFields

__all__ = [
    "ERRORS",
    "CaseworkClient",
    "CaseworkError",
    "Consequence",
    "CursorStore",
    "Decision",
    "DecisionFields",
    "DecisionHandler",
    "DecisionStatus",
    "EnqueuedItem",
    "ExceptionRaised",
    "FileCursorStore",
    "InvalidInputError",
    "InvalidTransitionError",
    "ItemState",
    "MemoryCursorStore",
    "NewItemInput",
    "NotFoundError",
    "NotPermittedError",
    "RedriveResultRecorded",
    "RequestError",
    "ResultError",
    "Verdict",
    "WaitTimeout",
    "WebhookVerificationError",
    "raise_for_result",
    "verify_webhook",
]
