"""The shared query-string form of a search (server/domain/search/params.py)."""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import parse_qsl, urlencode

import pytest
from graphql import GraphQLInputObjectType

from server.domain.failures import InvalidInput
from server.domain.model import DecisionStatus, ItemState, Verdict
from server.domain.search.filters import DecisionSearch, ItemSearch, SearchOrder
from server.domain.search.params import (
    DECISION_PARAMETERS,
    ITEM_PARAMETERS,
    camel_case,
    decision_search_from_params,
    item_search_from_params,
    search_params,
)
from server.graphql.schema import build_schema


def items(query: str) -> ItemSearch | InvalidInput:
    return item_search_from_params(parse_qsl(query, keep_blank_values=True))


def decisions(query: str) -> DecisionSearch | InvalidInput:
    return decision_search_from_params(parse_qsl(query, keep_blank_values=True))


def test_every_filter_of_each_search_has_its_parameter() -> None:
    assert list(ITEM_PARAMETERS) == [field.name for field in fields(ItemSearch)]
    assert list(DECISION_PARAMETERS) == [field.name for field in fields(DecisionSearch)]


def test_parameters_are_named_as_the_graphql_input_fields() -> None:
    schema = build_schema()
    for graphql_name, parameters in (
        ("ItemSearch", ITEM_PARAMETERS),
        ("DecisionSearch", DECISION_PARAMETERS),
    ):
        input_type = schema._schema.type_map[graphql_name]
        assert isinstance(input_type, GraphQLInputObjectType)
        assert sorted(camel_case(name) for name in parameters) == sorted(input_type.fields)


def test_an_empty_query_is_a_search_without_filters() -> None:
    assert items("") == ItemSearch()
    assert decisions("") == DecisionSearch()


def test_every_kind_of_value_is_read() -> None:
    query = (
        "queues=kyc&queues=payouts&states=PENDING&states=DECIDED&externalKeyPrefix=app-77"
        "&subjectRef=subj-1&priorityAtLeast=-5&priorityAtMost=%2B40"
        "&enqueuedAfter=2026-10-01&enqueuedBefore=2026-10-02T09:30:00Z"
        "&decidedAfter=2026-10-01T11:30:00%2B02:00&decidedBefore=2026-10-03T08:00:00"
        "&decidedBy=rita&verdict=REJECT&reasonCode=name_mismatch&decisionStatus=EFFECTIVE"
        "&overturned=false&assignedTo=rob&held=true&overdue=false&hasNotes=true"
        "&order=OLDEST_FIRST"
    )

    assert items(query) == ItemSearch(
        queues=("kyc", "payouts"),
        states=(ItemState.PENDING, ItemState.DECIDED),
        external_key_prefix="app-77",
        subject_ref="subj-1",
        priority_at_least=-5,
        priority_at_most=40,
        enqueued_after=datetime(2026, 10, 1, tzinfo=UTC),
        enqueued_before=datetime(2026, 10, 2, 9, 30, tzinfo=UTC),
        decided_after=datetime(2026, 10, 1, 9, 30, tzinfo=UTC),
        decided_before=datetime(2026, 10, 3, 8, tzinfo=UTC),
        decided_by="rita",
        verdict=Verdict.REJECT,
        reason_code="name_mismatch",
        decision_status=DecisionStatus.EFFECTIVE,
        overturned=False,
        assigned_to="rob",
        held=True,
        overdue=False,
        has_notes=True,
        order=SearchOrder.OLDEST_FIRST,
    )
    offset = items("decidedAfter=2026-10-01T11:30:00%2B02:00")
    assert isinstance(offset, ItemSearch)
    assert offset.decided_after is not None
    assert offset.decided_after.utcoffset() == timedelta(hours=2)


def test_a_decision_search_reads_its_own_filters() -> None:
    query = (
        "queues=kyc&reviewer=rita&verdict=APPROVE&reasonCode=documents_ok"
        "&decidedAfter=2026-07-01&decidedBefore=2026-10-01&status=SUPERSEDED&order=NEWEST_FIRST"
    )

    assert decisions(query) == DecisionSearch(
        queues=("kyc",),
        reviewer="rita",
        verdict=Verdict.APPROVE,
        reason_code="documents_ok",
        decided_after=datetime(2026, 7, 1, tzinfo=UTC),
        decided_before=datetime(2026, 10, 1, tzinfo=UTC),
        status=DecisionStatus.SUPERSEDED,
    )


@pytest.mark.parametrize(
    ("query", "field", "says"),
    [
        ("queue=kyc", "queue", "not a filter of this search"),
        ("first=10", "first", "not a filter of this search"),
        ("q=app-7731", "q", "not a filter of this search"),
        ("states=pending", "states", "'pending' is not an item state (one of PENDING,"),
        ("verdict=OVERTURN", "verdict", "is not a verdict (one of APPROVE, REJECT, ESCALATE)"),
        ("decisionStatus=", "decisionStatus", "is not a decision status"),
        ("order=NEWEST", "order", "is not an order (one of NEWEST_FIRST, OLDEST_FIRST)"),
        ("priorityAtLeast=ten", "priorityAtLeast", "expected a whole number, got 'ten'"),
        ("priorityAtMost=2.5", "priorityAtMost", "expected a whole number"),
        ("priorityAtMost=99999999999", "priorityAtMost", "expected a whole number"),
        ("held=yes", "held", "expected true or false, got 'yes'"),
        ("overdue=True", "overdue", "expected true or false"),
        ("enqueuedAfter=yesterday", "enqueuedAfter", "expected an ISO 8601 time"),
        ("enqueuedAfter=20261001", "enqueuedAfter", "expected an ISO 8601 time"),
        ("decidedBefore=2026-13-01", "decidedBefore", "expected an ISO 8601 time"),
        ("decidedBy=a&decidedBy=b", "decidedBy", "given more than once"),
    ],
)
def test_a_bad_parameter_is_refused_by_name(query: str, field: str, says: str) -> None:
    refused = items(query)

    assert isinstance(refused, InvalidInput), refused
    assert refused.field == field
    assert refused.message.startswith(f"{field}: ")
    assert says in refused.message


def test_an_item_filter_is_not_a_decision_filter() -> None:
    refused = decisions("states=PENDING")

    assert refused == InvalidInput(
        "states: not a filter of this search (its filters: queues, reviewer, verdict, "
        "reasonCode, decidedAfter, decidedBefore, status, order)",
        "states",
    )


def test_a_search_reads_back_from_its_own_parameters() -> None:
    search = ItemSearch(
        queues=("kyc", "payouts"),
        states=(ItemState.LEASED,),
        priority_at_least=3,
        enqueued_after=datetime(2026, 10, 1, 9, tzinfo=timezone(timedelta(hours=-4))),
        overturned=True,
        order=SearchOrder.OLDEST_FIRST,
    )

    pairs = search_params(search)

    assert pairs == [
        ("queues", "kyc"),
        ("queues", "payouts"),
        ("states", "LEASED"),
        ("priorityAtLeast", "3"),
        ("enqueuedAfter", "2026-10-01T13:00:00Z"),
        ("overturned", "true"),
        ("order", "OLDEST_FIRST"),
    ]
    assert items(urlencode(pairs)) == search
    assert search_params(DecisionSearch()) == []
