"""Installing and running tests/identity/provider/provider.mjs (see tests/identity/oidc.py,
which configures it): `npm ci` on first use, one xdist worker at a time; `node provider.mjs
CONFIG` started and awaited on the readiness line it prints, then stopped."""

from __future__ import annotations

import fcntl
import hashlib
import json
import selectors
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

PROVIDER_DIR = Path(__file__).parent / "provider"
READY_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 10.0
_STAMP = ".casework-installed"


def install_provider() -> None:
    """`npm ci` in tests/identity/provider unless node_modules matches package-lock.json.

    xdist workers take a file lock, so one installs while the others wait for it."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        raise RuntimeError(
            "the identity tests run a real OpenID provider on Node.js (18 or later): "
            "install `nodejs` and `npm` (.ci/run does on Debian)"
        )
    lock_digest = hashlib.sha256((PROVIDER_DIR / "package-lock.json").read_bytes()).hexdigest()
    stamp = PROVIDER_DIR / "node_modules" / _STAMP
    with open(PROVIDER_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == lock_digest:
            return
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=PROVIDER_DIR,
            check=True,
        )
        stamp.write_text(lock_digest)


class ProviderProcess:
    """One `node provider.mjs` at a time; its stderr goes to `log_file`."""

    def __init__(self, log_file: Path) -> None:
        self.log_file = log_file
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, config_file: Path) -> dict[str, Any]:
        """Starts the provider and returns its readiness line ({issuer, port}); raises with
        its log when it does not come up within READY_TIMEOUT_SECONDS."""
        if self.running:
            raise RuntimeError("the provider is already running")
        install_provider()
        with open(self.log_file, "ab") as log:
            self._process = subprocess.Popen(
                ["node", "provider.mjs", str(config_file)],
                cwd=PROVIDER_DIR,
                stdout=subprocess.PIPE,
                stderr=log,
            )
        return self._await_ready(self._process)

    def _await_ready(self, process: subprocess.Popen[bytes]) -> dict[str, Any]:
        assert process.stdout is not None
        deadline = time.monotonic() + READY_TIMEOUT_SECONDS
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while (left := deadline - time.monotonic()) > 0:
                if not selector.select(left):
                    break
                line = process.stdout.readline()
                if not line:
                    break
                if line.startswith(b"READY "):
                    ready: dict[str, Any] = json.loads(line[len(b"READY ") :])
                    return ready
        self.stop()
        raise RuntimeError(f"the OpenID provider did not start:\n{self.log_file.read_text()}")

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
