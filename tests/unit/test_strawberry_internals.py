"""server/graphql/strawberry_internals.py relies on Strawberry below its documented API: an
upgrade that renames, moves or stops calling what it overrides or calls must fail here, not
leave a refused document closing the socket or answered as the server's fault unnoticed.
The installed version must be one pyproject.toml says is known to work."""

from __future__ import annotations

import importlib.metadata
import inspect
import tomllib

from graphql import GraphQLSchema
from packaging.requirements import Requirement
from packaging.version import Version
from strawberry.http.async_base_view import AsyncBaseHTTPView
from strawberry.http.base import BaseView
from strawberry.schema import schema as strawberry_schema
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)

from server.app import CaseworkGraphQL
from server.config import REPO_ROOT
from server.graphql.schema import build_schema
from server.graphql.strawberry_internals import (
    OVERRIDDEN_STEPS,
    PRE_EXECUTION_REFUSALS,
    RefusingTransportWSHandler,
    graphql_schema_of,
)
from server.graphql.websocket import TransportWSHandler

STRAWBERRY = "strawberry-graphql"


def parameters(function: object) -> list[str]:
    return list(inspect.signature(function).parameters)  # type: ignore[arg-type]


def test_the_handler_still_has_the_two_private_steps_with_their_arguments() -> None:
    assert parameters(BaseGraphQLTransportWSHandler._send_result_stream) == [
        "self",
        "operation",
        "result_source",
    ]
    assert parameters(BaseGraphQLTransportWSHandler._handle_pre_execution_error) == [
        "self",
        "operation",
        "result",
    ]


def test_the_handler_still_takes_those_steps() -> None:
    """Every operation's results go through _send_result_stream, and a pre-execution error
    of its first result through _handle_pre_execution_error: were either bypassed, the
    overrides would never run."""
    run = inspect.getsource(BaseGraphQLTransportWSHandler.run_operation)
    send = inspect.getsource(BaseGraphQLTransportWSHandler._send_result_stream)
    assert "await self._send_result_stream(operation, result_source)" in run
    assert "PreExecutionError" in send
    assert "await self._handle_pre_execution_error(operation, result)" in send


def test_what_the_refusals_call_on_an_operation_is_still_there() -> None:
    for name in ("send_initial_errors", "send_operation_message", "send_next"):
        assert inspect.iscoroutinefunction(getattr(Operation, name)), name


def test_no_other_private_step_of_strawberry_is_overridden_anywhere_else() -> None:
    """The casework handler overrides Strawberry's private methods only through the
    internals module, and that module only the steps it names."""
    private = {
        name
        for name in vars(BaseGraphQLTransportWSHandler)
        if name.startswith("_") and not name.startswith("__")
    }
    assert {name for name in vars(RefusingTransportWSHandler) if name in private} == (
        OVERRIDDEN_STEPS
    )
    assert not {name for name in vars(TransportWSHandler) if name in private}


def test_the_view_still_tells_a_streaming_accept_header_apart() -> None:
    assert parameters(BaseView._get_stream_transport_from_headers) == ["self", "headers"]
    assert issubclass(CaseworkGraphQL, BaseView)
    # The method the fast path replaces for a plain POST still asks it too.
    parse = inspect.getsource(AsyncBaseHTTPView.parse_http_body)
    assert "self._get_stream_transport_from_headers(request.headers)" in parse


def test_the_pre_execution_refusals_are_still_raised_where_they_were() -> None:
    source = inspect.getsource(strawberry_schema)
    for refusal in PRE_EXECUTION_REFUSALS:
        assert f"raise {refusal.__name__}" in source, refusal
        # And turned into a pre-execution error of a stream, not raised out of it.
        assert refusal.__name__ in inspect.getsource(strawberry_schema.Schema._stream)


def test_the_installed_strawberry_is_one_known_to_work() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    (declared,) = [
        Requirement(text)
        for text in project["dependencies"]
        if Requirement(text).name == STRAWBERRY
    ]
    installed = Version(importlib.metadata.version(STRAWBERRY))
    assert declared.specifier.contains(installed), (str(declared), str(installed))
    # A range closed above: a newer Strawberry is tried and named before it is allowed.
    assert any(spec.operator == "<" for spec in declared.specifier), str(declared)


def test_a_schema_still_keeps_its_graphql_core_schema() -> None:
    built = graphql_schema_of(build_schema())

    assert isinstance(built, GraphQLSchema)
    assert built.query_type is not None
    assert built.query_type.name == "Query"


def test_the_resolver_wrapper_still_converts_through_the_module_global() -> None:
    """argument_conversion.install replaces `convert_arguments` where get_arguments finds
    it; the planned converter mirrors Strawberry's convert_argument, read here."""
    from strawberry.schema import schema_converter
    from strawberry.types import arguments

    from server.graphql import argument_conversion

    build_schema()
    assert "convert_arguments(" in inspect.getsource(schema_converter.get_arguments)
    installed = vars(schema_converter)["convert_arguments"]
    assert installed is argument_conversion.convert_arguments
    assert parameters(arguments.convert_arguments) == [
        "value",
        "arguments",
        "scalar_registry",
        "config",
        "info",
    ]
    source = inspect.getsource(arguments.convert_argument)
    for branch in ("StrawberryMaybe", "StrawberryOptional", "StrawberryList", "from_input"):
        assert branch in source
