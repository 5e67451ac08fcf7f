"""Reads of exceptions and workflows. What a caller may not see reads as null or is left out."""

from __future__ import annotations

import strawberry
from strawberry.types import Info

from server.domain.exceptions import reads, records, workflows
from server.domain.exceptions.rules import EXCEPTION_ID, NAME
from server.graphql.context import Context
from server.graphql.exceptions.types import (
    ExceptionConnection,
    ExceptionEdge,
    ExceptionFilter,
    ExceptionNode,
    Workflow,
)
from server.graphql.pagination import PageInfo, decode_text_cursor, encode_cursor, page_size


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

    @strawberry.field(description="Exceptions your token covers, oldest first.")
    async def exceptions(
        self,
        info: Info[Context, None],
        filter: ExceptionFilter | None = None,
        first: int = 50,
        after: str | None = None,
    ) -> ExceptionConnection:
        size = page_size(first)
        where = filter or ExceptionFilter()
        found = await reads.exceptions_page(
            info.context.db,
            info.context.principal,
            reads.ExceptionFilter(
                workflow=where.workflow,
                state=where.state,
                owner_role=where.owner_role,
                overdue=where.overdue,
                source_record_id=where.source_record_id,
            ),
            decode_text_cursor("exception", after),
            size + 1,
        )
        edges = [
            ExceptionEdge(
                cursor=encode_cursor("exception", e.id), node=ExceptionNode.from_domain(e)
            )
            for e in found[:size]
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
