"""`casework serve` runs uvicorn on httptools and uvloop, named, never left to "auto"
(which falls back to h11 and asyncio without a word when either is missing)."""

from __future__ import annotations

import argparse

import uvloop
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from server.cli.serve import _uvicorn_config


async def nothing(scope: Scope, receive: Receive, send: Send) -> None:
    raise AssertionError("not called")


def test_serve_names_httptools_and_uvloop() -> None:
    config = _uvicorn_config(argparse.Namespace(host="127.0.0.1", port=0), nothing)
    assert (config.http, config.loop) == ("httptools", "uvloop")
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    loop_factory = config.get_loop_factory()
    assert loop_factory is not None
    loop = loop_factory()
    try:
        assert isinstance(loop, uvloop.Loop)
    finally:
        loop.close()


def test_serve_with_workers_names_them_too() -> None:
    config = _uvicorn_config(argparse.Namespace(host="127.0.0.1", port=0), "x:y", workers=2)
    assert (config.http, config.loop) == ("httptools", "uvloop")
