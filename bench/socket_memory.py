"""What a console's socket costs the server, by file and line (tracemalloc).

One uvicorn process (bench/app_factory.py `create_traced`: tracemalloc on, and a
`/bench/heap` route) on a scratch database with --queues queues; --consoles consoles
connect as in bench/multiplex_bench.py (one socket each, queueBacklog and leaseEvents of
its queue), then the heap's growth since just before they came is printed per socket, by
file (`--by filename`) or by line. tracemalloc slows the server: only memory is measured.

    .venv/bin/python bench/socket_memory.py [--consoles 1000] [--shared 1] [--by filename]
"""

from __future__ import annotations

import argparse
import asyncio

import benchlib
import httpx
from fanout_bench import proc_status_kib, raise_open_files, wait_subscribers
from multiplex_bench import Client, prepare

from server.lean_websocket import IMPORT_STRING as LEAN_WS


async def main(config: argparse.Namespace) -> None:
    raise_open_files(config.consoles + 1024)
    database = benchlib.new_name("socketmem")
    try:
        await benchlib.create_migrated(config.server, database)
        config.sizes, config.rounds = [1], config.queues
        setup = await prepare(config, database)
        consoles = [
            (setup.tokens[q][i // len(setup.queues) % len(setup.tokens[q])], q)
            for i in range(config.consoles)
            for q in [setup.queues[i % len(setup.queues)]]
        ]
        async with (
            benchlib.uvicorn_server(
                benchlib.app_dsn(config.server, database),
                pool_min=2,
                pool_max=20,
                env={
                    "CASEWORK_EVENTS_TRANSPORT": "postgres",
                    "CASEWORK_MULTIPLEX_SUBSCRIPTIONS": config.shared,
                },
                ws=config.ws,
                factory="app_factory:create_traced",
            ) as server,
            httpx.AsyncClient(base_url=server.base_url, trust_env=False, timeout=120) as http,
        ):
            for wanted in (len(setup.queues), config.consoles):
                client = await Client.start()
                await client.send(
                    {"url": server.ws_url, "batch": 50, "consoles": consoles[:wanted]}
                )
                await client.receive()
                await wait_subscribers(http, 2 * wanted, 60.0)
                if wanted == len(setup.queues):
                    # Warm-up done: they leave, and the baseline is taken without them.
                    await client.send({"rounds": []})
                    await client.receive()
                    await client.send({})
                    await client.receive()
                    await client.stop()
                    await wait_subscribers(http, 0, 60.0)
                    await asyncio.sleep(1.0)
                    rss = proc_status_kib(server.pid, "VmRSS")
                    await http.get("/bench/heap", params={"mark": "1"})
            await asyncio.sleep(1.0)
            grown = proc_status_kib(server.pid, "VmRSS") - rss
            rows = (await http.get("/bench/heap", params={"by": config.by})).json()
            await client.stop()
        n = config.consoles
        total = sum(row["bytes"] for row in rows)
        benchlib.print_table(
            ["consoles", "multiplexing", "--ws", "RSS per socket kB", "traced heap per socket kB"],
            [
                [
                    str(n),
                    "on" if config.shared == "1" else "off",
                    config.ws,
                    f"+{grown / n:.1f}",
                    f"+{total / n / 1024:.1f} (top 40 {config.by}s)",
                ]
            ],
        )
        print()
        benchlib.print_table(
            ["B per socket", "blocks per socket", "where"],
            [[f"{row['bytes'] / n:.0f}", f"{row['count'] / n:.1f}", row["where"]] for row in rows],
        )
    finally:
        await benchlib.drop_database(config.server, database)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--database-url", default=benchlib.database_url_from_env())
    parser.add_argument("--consoles", type=int, default=1000)
    parser.add_argument("--queues", type=int, default=50)
    parser.add_argument("--tokens-per-queue", type=int, default=20)
    parser.add_argument("--shared", default="1", choices=["0", "1"])
    parser.add_argument("--by", default="filename", choices=["filename", "lineno"])
    parser.add_argument("--ws", default=LEAN_WS, help="as bench/multiplex_bench.py's")
    parser.add_argument("--seed", type=int, default=20240601)
    args = parser.parse_args()
    args.server = benchlib.require_local(args.database_url)
    return args


if __name__ == "__main__":
    benchlib.run(lambda: main(parse_args()))
