"""The TypeScript client (clients/typescript), tested by Node's test runner from here, so the
one test command runs it.

- `npm ci` on first use (one xdist worker at a time, as tests/identity does), then `tsc`
  into a temporary directory: a type error fails the build, and so the test.
- Its typed documents (GraphQL Code Generator's client preset, committed in src/gql/) are
  generated again into a temporary directory and must equal the committed ones.
- test/offline.test.ts: webhook verification against signatures made here by
  server/signatures.py, the cursor store, the typed errors, and a stream left and resumed
  when its server stops answering pings.
- test/live.test.ts: against a real `casework serve` on a test database, which this module
  starts, and stops and starts again on the same port when the Node test POSTs /restart to
  a small control server here (the decision stream must resume without a gap or a repeat;
  the idempotent helpers try again while the server is away).
"""

from __future__ import annotations

import asyncio
import fcntl
import filecmp
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.config import REPO_ROOT
from server.domain.model import Role
from server.signatures import new_secret, sign, standard_headers
from server.store.database import Database
from tests.api.live_server import STARTUP_SECONDS, STOP_SECONDS, casework_process, free_port
from tests.conftest import TestDatabase, token_maker
from tests.docs.helpers import code_blocks, section
from tests.live.helpers import POLL_SECONDS

CLIENT_DIR = REPO_ROOT / "clients" / "typescript"
DOCS = REPO_ROOT / "docs" / "integrations.md"
_STAMP = ".casework-installed"
# npm ci, a build, a run of Node's tests: each bounded.
INSTALL_SECONDS = 600
BUILD_SECONDS = 180
NODE_TESTS_SECONDS = 300

pytestmark = pytest.mark.xdist_group("typescript_client")


def _require_node() -> None:
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise RuntimeError(
            "the TypeScript client's tests run on Node.js (20 or later): install `nodejs` "
            "and `npm` (.ci/run does on Debian)"
        )


def install_client() -> None:
    """`npm ci` in clients/typescript unless node_modules matches package-lock.json."""
    _require_node()
    lock_digest = hashlib.sha256((CLIENT_DIR / "package-lock.json").read_bytes()).hexdigest()
    stamp = CLIENT_DIR / "node_modules" / _STAMP
    with open(CLIENT_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == lock_digest:
            return
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=CLIENT_DIR,
            check=True,
            timeout=INSTALL_SECONDS,
        )
        stamp.write_text(lock_digest)


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        args, cwd=CLIENT_DIR, capture_output=True, text=True, timeout=BUILD_SECONDS, env=env
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client and its tests compiled by tsc (strict) into a directory of their own."""
    install_client()
    out = tmp_path_factory.mktemp("ts-client")
    _run(["node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json", "--outDir", str(out)])
    # ESM, the packages the compiled files import, and `casework-client` itself (a package
    # may import itself by name), as the documentation's examples do.
    package = {"name": "casework-client", "type": "module", "exports": {".": "./src/index.js"}}
    (out / "package.json").write_text(json.dumps(package))
    (out / "node_modules").symlink_to(CLIENT_DIR / "node_modules")
    return out


def test_the_typed_documents_are_generated_from_the_schema_as_committed(
    tmp_path: Path,
) -> None:
    install_client()
    out = tmp_path / "gql"
    _run(
        ["node", "node_modules/@graphql-codegen/cli/cjs/bin.js", "--config", "codegen.ts"],
        env={**os.environ, "CASEWORK_CODEGEN_OUT": f"{out}/"},
    )
    committed = CLIENT_DIR / "src" / "gql"
    names = sorted(path.name for path in committed.iterdir())
    assert names == sorted(path.name for path in out.iterdir())
    _, mismatch, errors = filecmp.cmpfiles(committed, out, names, shallow=False)
    assert (mismatch, errors) == ([], []), (
        f"clients/typescript/src/gql is stale against schema.graphql ({mismatch + errors}): "
        "run `npm run codegen` in clients/typescript and commit the result"
    )


class NodeRun:
    """One `node --test` of compiled test files, its TAP output parsed."""

    def __init__(self, code: int, output: str) -> None:
        self.code = code
        self.output = output

    def count(self, what: str) -> int:
        found = re.findall(rf"^# {what} (\d+)$", self.output, flags=re.MULTILINE)
        assert found, f"no `# {what}` line in Node's output:\n{self.output}"
        return int(found[-1])


async def node_tests(built: Path, test_file: str, env: dict[str, str]) -> NodeRun:
    process = await asyncio.create_subprocess_exec(
        "node",
        "--enable-source-maps",
        "--test",
        # Ends the run when its tests have, even if a failed one left a socket open.
        "--test-force-exit",
        "--test-reporter=tap",
        str(built / "test" / test_file),
        cwd=built,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        # Its own process group: the runner and the test file's process end together.
        start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), NODE_TESTS_SECONDS)
    except TimeoutError:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = await process.communicate()
        raise AssertionError(
            f"node --test ran past {NODE_TESTS_SECONDS} s:\n{output.decode()}"
        ) from None
    assert process.returncode is not None
    return NodeRun(process.returncode, output.decode())


def _signed(body: bytes, headers: dict[str, str]) -> dict[str, object]:
    return {"body": body.decode(), "headers": headers}


async def test_offline_node_tests_verify_what_casework_signs(built: Path, tmp_path: Path) -> None:
    secret, old_secret, other = new_secret(), new_secret(), new_secret()
    plain = "a-secret-from-before-standard-webhooks"
    message_id = "evt_" + "0123456789abcdef" * 2
    body = json.dumps(
        {"type": "decision.effective", "data": {"verdict": "APPROVE", "note": "Zoë's papers"}},
        ensure_ascii=False,
    ).encode()
    now = int(time.time())
    legacy = {
        "Casework-Signature": sign(plain, body, timestamp=now),
        "Idempotency-Key": message_id,
    }
    vectors = {
        "secret": secret,
        "oldSecret": old_secret,
        "plainSecret": plain,
        "otherSecret": other,
        "messageId": message_id,
        "single": _signed(body, standard_headers(message_id, body, [secret])),
        "rotation": _signed(body, standard_headers(message_id, body, [secret, old_secret])),
        "plainStandard": _signed(body, standard_headers(message_id, body, [plain])),
        "legacy": _signed(body, legacy),
        "stale": _signed(body, standard_headers(message_id, body, [secret], timestamp=now - 600)),
    }
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(vectors))

    run = await node_tests(built, "offline.test.js", {"CASEWORK_TS_VECTORS": str(path)})

    assert run.code == 0, run.output
    assert (run.count("pass"), run.count("fail")) == (10, 0), run.output


class RestartableServe:
    """`casework serve` on one port, which can be stopped and started again on it."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Task[None] | None = None
        self.restarts = 0

    async def start(self) -> None:
        process = await casework_process(
            self.env,
            "serve",
            "--port",
            str(self.port),
            cwd=None,
            stdout=asyncio.subprocess.DEVNULL,
        )
        self._process = process
        assert process.stderr is not None

        async def started() -> None:
            assert process.stderr is not None
            while line := (await process.stderr.readline()).decode():
                self.log.append(line)
                if "Application startup complete" in line:
                    return
            raise RuntimeError("casework serve exited:\n" + "".join(self.log))

        await asyncio.wait_for(started(), STARTUP_SECONDS)
        # uvicorn reports the application's startup before its socket listens: a client
        # told "restarted" on that line alone may find the port closed.
        await asyncio.wait_for(self._listening(), STARTUP_SECONDS)

        async def drain() -> None:
            assert process.stderr is not None
            while line := (await process.stderr.readline()).decode():
                self.log.append(line)

        self._drain = asyncio.create_task(drain())

    async def _listening(self) -> None:
        async with httpx.AsyncClient(base_url=self.url, timeout=5) as client:
            while True:
                try:
                    if (await client.get("/livez")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await asyncio.sleep(POLL_SECONDS)

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
            except TimeoutError:
                process.kill()
                await process.wait()
                raise AssertionError(
                    f"casework serve did not stop within {STOP_SECONDS} s of SIGTERM:\n"
                    + "".join(self.log[-40:])
                ) from None
        if self._drain is not None:
            await self._drain

    async def restart(self) -> None:
        await self.stop()
        await self.start()
        self.restarts += 1


@asynccontextmanager
async def control_server(serve: RestartableServe) -> AsyncIterator[str]:
    """http://127.0.0.1:PORT: POST /restart restarts `serve`, answering once it is up;
    POST /stop and POST /start do each half."""
    actions = {
        b"POST /restart": serve.restart,
        b"POST /stop": serve.stop,
        b"POST /start": serve.start,
    }

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await reader.readuntil(b"\r\n\r\n")
            action = actions.get(request.split(b" HTTP/", 1)[0])
            if action is None:
                status, text = "404 Not Found", "POST /restart, /stop or /start"
            else:
                try:
                    await action()
                    status, text = "200 OK", "done"
                except Exception as error:  # reported to the Node test, which fails on it
                    status, text = "500 Internal Server Error", repr(error)
            payload = text.encode()
            writer.write(
                f"HTTP/1.1 {status}\r\ncontent-length: {len(payload)}\r\n"
                "connection: close\r\n\r\n".encode()
                + payload
            )
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def test_live_node_tests_against_casework_serve(
    built: Path, test_database: TestDatabase, owner_db: Database, tmp_path: Path
) -> None:
    make = token_maker(owner_db)
    tokens = {
        "admin": await make("ada", Role.ADMIN),
        "integration": await make("kyc-provider", Role.INTEGRATION),
        "rita": await make("rita", Role.REVIEWER, "kyc", "hooks", "stream"),
    }
    serve = RestartableServe(
        {
            **os.environ,
            "DATABASE_URL": test_database.owner_dsn,
            "CASEWORK_EFFECT_ALLOWED_HOSTS": "127.0.0.1",
            "CASEWORK_APPLY_BACKOFF_SECONDS": "0.2",
        }
    )
    await serve.start()
    try:
        async with control_server(serve) as control:
            live = {
                "url": serve.url,
                "control": control,
                "stateDir": str(tmp_path),
                "tokens": tokens,
            }
            run = await node_tests(built, "live.test.js", {"CASEWORK_TS_LIVE": json.dumps(live)})
    finally:
        await serve.stop()

    # The figures the Node tests report (never asserted), for `pytest -s`.
    print("\n".join(re.findall(r"^# (waitForDecision .*|after .*)$", run.output, re.MULTILINE)))
    assert run.code == 0, run.output + "\n--- casework serve:\n" + "".join(serve.log[-60:])
    assert (run.count("pass"), run.count("fail")) == (8, 0), run.output
    assert serve.restarts == 2
    tracebacks = [line for line in serve.log if line.startswith("Traceback")]
    assert not tracebacks, "".join(serve.log)


CONFIGURE_KYC = """
mutation {
  q: configureQueue(input: {name: "kyc"}) { __typename }
  r: defineReasonCode(input: {queue: "kyc", code: "documents_ok", label: "Documents match",
                              verdicts: [APPROVE]}) { __typename }
}
"""
CLAIM_KEYED = """
mutation { claimNext(queue: "kyc") {
  __typename ... on Claim { leaseToken evidenceHash item { id externalKey } } } }
"""
DECIDE = """
mutation($input: SubmitDecisionInput!) { submitDecision(input: $input) { __typename } }
"""
# The documented example's item, and what it prints once a reviewer approved it.
DOCUMENTED_KEY = "customer-1042"
DOCUMENTED_SECONDS = 60


async def approve_when_enqueued(url: str, tokens: dict[str, str]) -> None:
    """As rita: claims kyc's next item until the documented one is there, then approves it."""

    async def call(token: str, query: str, **variables: object) -> dict[str, Any]:
        response = await client.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()["data"]
        return data

    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        configured = await call(tokens["admin"], CONFIGURE_KYC)
        assert configured["q"]["__typename"] == "QueueConfigured", configured
        while True:
            claim = (await call(tokens["rita"], CLAIM_KEYED))["claimNext"]
            if claim["__typename"] == "Claim":
                assert claim["item"]["externalKey"] == DOCUMENTED_KEY, claim
                entry = {
                    "itemId": claim["item"]["id"],
                    "leaseToken": claim["leaseToken"],
                    "verdict": "APPROVE",
                    "reasonCode": "documents_ok",
                    "evidenceHash": claim["evidenceHash"],
                }
                decided = await call(tokens["rita"], DECIDE, input=entry)
                assert decided["submitDecision"]["__typename"] == "DecisionRecorded", decided
                return
            assert claim["__typename"] == "QueueEmpty", claim
            await asyncio.sleep(POLL_SECONDS)


async def test_the_documented_five_minute_start_runs(
    built: Path, test_database: TestDatabase, owner_db: Database
) -> None:
    """docs/integrations.md's examples parse, and the one that enqueues and waits prints
    the decision a reviewer then makes, on a real `casework serve`."""
    blocks = code_blocks(section(DOCS, "## TypeScript client"), "js")
    assert len(blocks) == 3, blocks
    for number, block in enumerate(blocks):
        example = built / f"documented-{number}.mjs"
        example.write_text(block)
        _run(["node", "--check", str(example)])
    assert 'url: "http://127.0.0.1:8000"' in blocks[0]
    make = token_maker(owner_db)
    tokens = {
        "admin": await make("ada", Role.ADMIN),
        "integration": await make("kyc-provider", Role.INTEGRATION),
        "rita": await make("rita", Role.REVIEWER, "kyc"),
    }
    serve = RestartableServe({**os.environ, "DATABASE_URL": test_database.owner_dsn})
    await serve.start()
    try:
        send = built / "documented-send.mjs"
        send.write_text(blocks[0].replace("http://127.0.0.1:8000", serve.url))
        process = await asyncio.create_subprocess_exec(
            "node",
            str(send),
            cwd=built,
            env={**os.environ, "TOKEN": tokens["integration"]},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        try:
            await asyncio.wait_for(approve_when_enqueued(serve.url, tokens), DOCUMENTED_SECONDS)
            output, _ = await asyncio.wait_for(process.communicate(), DOCUMENTED_SECONDS)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
    finally:
        await serve.stop()
    assert (process.returncode, output.decode()) == (0, "APPROVE documents_ok rita\n")


def test_the_trusted_manifest_holds_the_texts_the_client_sends(built: Path) -> None:
    """Each typed document's `toString()`, which the client posts as `query` (and sends
    over the socket), is a document of the built-in typescript-client.json, byte for byte."""
    from server.graphql.documents.build import typescript_client_documents
    from server.graphql.documents.ids import document_id
    from server.graphql.documents.manifest import BUILT_IN

    script = (
        "const gql = await import(process.argv[1]);"
        "const texts = Object.entries(gql).filter(([name]) => name.endsWith('Document'))"
        ".map(([, document]) => document.toString());"
        "process.stdout.write(JSON.stringify(texts));"
    )
    module = (built / "src" / "gql" / "graphql.js").as_uri()
    sent = json.loads(_run(["node", "--input-type=module", "-e", script, module]).stdout)
    manifest = json.loads((BUILT_IN / "typescript-client.json").read_text())
    assert sorted(sent) == sorted(typescript_client_documents())
    assert {document_id(text): text for text in sent} == manifest
