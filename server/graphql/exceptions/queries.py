"""Reads of exceptions and workflows. What a caller may not see reads as null or is left out."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Annotated

import strawberry
from strawberry.types import Info

from server.domain.exceptions import reads, records, workflows
from server.domain.exceptions.rules import EXCEPTION_ID, NAME
from server.domain.search.filters import SearchOrder as Order
from server.graphql.codes import ClientError
from server.graphql.context import Context
from server.graphql.errors import Error
from server.graphql.exceptions.types import (
    ExceptionConnection,
    ExceptionEdge,
    ExceptionFilter,
    ExceptionNode,
    Workflow,
)
from server.graphql.pagination import PageInfo, decode_text_cursor, encode_cursor, page_size

# Declares GraphQL's SearchOrder on the domain's enum, which `order` is typed by: imported
# first, so the schema knows the enum by that declaration (its description), not by another.
import server.graphql.search.types  # noqa: F401  isort: skip


@strawberry.type(
    description=(
        "No workflow was given, and the source record has exceptions in several: ask again "
        "with one."
    )
)
class AmbiguousSourceRecordId(Error):
    source_record_id: str
    workflows: list[str]


ExceptionBySourceRecordIdResult = Annotated[
    ExceptionNode | AmbiguousSourceRecordId, strawberry.union("ExceptionBySourceRecordIdResult")
]


def _activity_cursor(order: Order, exception: records.ExceptionRecord) -> str:
    text = f"exception-activity|{order.value}|{exception.updated_at.isoformat()}|{exception.id}"
    return base64.urlsafe_b64encode(text.encode()).decode()


def _activity_position(order: Order, cursor: str | None) -> reads.Activity | None:
    """Where the next page by activity starts; a cursor of another order is refused."""
    if cursor is None:
        return None
    try:
        kind, of_order, at, exception_id = (
            base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        )
        when = datetime.fromisoformat(at)
        if (
            when.tzinfo is not None
            and (kind, of_order) == ("exception-activity", order.value)
            and EXCEPTION_ID.fullmatch(exception_id)
        ):
            return reads.Activity(when, exception_id)
    except (ValueError, UnicodeDecodeError):
        pass
    raise ClientError(f"malformed cursor {cursor[:40]!r}")


@strawberry.type
class ExceptionQuery:
    @strawberry.field
    async def exception(self, info: Info[Context, None], id: strawberry.ID) -> ExceptionNode | None:
        if not EXCEPTION_ID.fullmatch(id):
            return None
        found = await info.context.loaders.exception.load(id)
        if found is None or not reads.visible_to(info.context.principal, found):
            return None
        return ExceptionNode.from_domain(found)

    @strawberry.field(
        description=(
            "An exception raised for this source record: in `workflow` when given, else in "
            "any workflow you cover. When a record has several in a workflow (a recurrence "
            "after a closure is a new exception), the open one answers, else the newest "
            "closed. Null when there is none you may see."
        )
    )
    async def exception_by_source_record_id(
        self, info: Info[Context, None], source_record_id: str, workflow: str | None = None
    ) -> ExceptionBySourceRecordIdResult | None:
        found = await reads.exception_by_source_record_id(
            info.context.db, info.context.principal, source_record_id, workflow
        )
        if isinstance(found, reads.AmbiguousSourceRecord):
            return AmbiguousSourceRecordId(
                message=found.message,
                source_record_id=found.source_record_id,
                workflows=list(found.workflows),
            )
        return None if found is None else ExceptionNode.from_domain(found)

    @strawberry.field(
        description=(
            "Exceptions your token covers. Without `order`, oldest first by when each was "
            "raised, as always; with it, by latest activity (the last change to each), "
            "newest or oldest first. An exception that changes while you page moves in that "
            "order."
        )
    )
    async def exceptions(
        self,
        info: Info[Context, None],
        filter: ExceptionFilter | None = None,
        first: int = 50,
        after: str | None = None,
        order: Order | None = None,
    ) -> ExceptionConnection:
        size = page_size(first)
        where = filter or ExceptionFilter()
        domain_filter = reads.ExceptionFilter(
            workflow=where.workflow,
            state=where.state,
            owner_role=where.owner_role,
            overdue=where.overdue,
            source_record_id=where.source_record_id,
        )
        if order is None:
            found = await reads.exceptions_page(
                info.context.db,
                info.context.principal,
                domain_filter,
                decode_text_cursor("exception", after),
                size + 1,
            )
            cursors = [encode_cursor("exception", e.id) for e in found[:size]]
        else:
            found = await reads.exceptions_page_by_activity(
                info.context.db,
                info.context.principal,
                domain_filter,
                order is Order.NEWEST_FIRST,
                _activity_position(order, after),
                size + 1,
            )
            cursors = [_activity_cursor(order, e) for e in found[:size]]
        edges = [
            ExceptionEdge(cursor=cursor, node=ExceptionNode.from_domain(e))
            for cursor, e in zip(cursors, found, strict=False)
        ]
        return ExceptionConnection(edges=edges, page_info=PageInfo.of(edges, read=found))

    @strawberry.field(description="The workflows your token covers, with their catalogues.")
    async def workflows(self, info: Info[Context, None]) -> list[Workflow]:
        found = await workflows.readable_workflows(info.context.db, info.context.principal)
        return [_with_reasons(info, workflow, reasons) for workflow, reasons in found]

    @strawberry.field(description="A workflow your token covers; null for any other name.")
    async def workflow(self, info: Info[Context, None], name: str) -> Workflow | None:
        if not NAME.fullmatch(name):
            return None
        found = await workflows.readable_workflows(info.context.db, info.context.principal, [name])
        return _with_reasons(info, *found[0]) if found else None


def _with_reasons(
    info: Info[Context, None], workflow: records.Workflow, reasons: list[records.ExceptionReason]
) -> Workflow:
    """The scope check read the workflow's reasons: `Workflow.reasons` takes them from the
    loader instead of reading them again."""
    info.context.loaders.exception_reasons.prime(workflow.name, reasons)
    return Workflow.from_domain(workflow)
