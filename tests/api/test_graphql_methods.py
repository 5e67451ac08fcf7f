"""/graphql over HTTP answers GET and POST; any other method is 405 with `Allow`, whatever the
token, because the method is checked before the token is looked up (an OPTIONS that is not
a CORS preflight used to be answered 401). A preflight is still answered by CORS."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from server.config import Settings
from tests.api.conftest import Tokens, in_process_client
from tests.conftest import TestDatabase

OTHER_METHODS = ("OPTIONS", "PUT", "PATCH", "DELETE", "HEAD")
CONSOLE = "https://console.example.com"


def refused_as_wrong_method(response: httpx.Response, method: str) -> None:
    assert response.status_code == 405, (method, response.status_code, response.text)
    assert response.headers["allow"] == "GET, POST"
    assert "www-authenticate" not in response.headers
    if method != "HEAD":
        assert response.json() == {
            "errors": [
                {
                    "message": "GraphQL only supports GET and POST requests.",
                    "extensions": {"code": "BAD_REQUEST"},
                }
            ]
        }


@pytest.mark.parametrize("method", OTHER_METHODS)
async def test_another_method_is_405_without_a_token(
    client: httpx.AsyncClient, method: str
) -> None:
    refused_as_wrong_method(await client.request(method, "/graphql"), method)


@pytest.mark.parametrize("method", OTHER_METHODS)
async def test_another_method_is_405_with_any_token(
    client: httpx.AsyncClient, tokens: Tokens, method: str
) -> None:
    for authorization in (f"Bearer {tokens.manager}", "Bearer cw_not-a-token"):
        response = await client.request(
            method, "/graphql", headers={"Authorization": authorization}
        )
        refused_as_wrong_method(response, method)


async def test_a_post_without_a_token_is_still_401(client: httpx.AsyncClient) -> None:
    response = await client.post("/graphql", json={"query": "{ me { user } }"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_preflight_is_still_answered_by_cors(test_database: TestDatabase) -> None:
    allowed = replace(Settings.from_env(), allowed_origins=(CONSOLE,))
    preflight = {
        "Origin": CONSOLE,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    async with in_process_client(test_database, dev=False, settings=allowed) as client:
        response = await client.options("/graphql", headers=preflight)
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == CONSOLE
