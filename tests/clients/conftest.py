"""The Python client's tests import it from clients/python, as a user's checkout would run
it; its generator (ariadne-codegen) gets an environment of its own, made on first use."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from server.config import REPO_ROOT

CLIENT_DIR = REPO_ROOT / "clients" / "python"
if str(CLIENT_DIR) not in sys.path:
    sys.path.insert(0, str(CLIENT_DIR))

# ariadne-codegen 0.19 needs graphql-core < 3.3 (and ruff < 0.16, with which it formats
# what it writes); the server needs graphql-core 3.3. So it cannot join the test extra: it
# lives in this environment, made once (one xdist worker at a time) and kept.
CODEGEN_REQUIREMENT = "ariadne-codegen[subscriptions]==0.19.0"
CODEGEN_ENV = CLIENT_DIR / ".codegen-env"
_STAMP = ".casework-installed"


def codegen_command() -> Path:
    """The ariadne-codegen executable of the generator's environment, installed if needed."""
    executable = CODEGEN_ENV / "bin" / "ariadne-codegen"
    stamp = CODEGEN_ENV / _STAMP
    CLIENT_DIR.mkdir(parents=True, exist_ok=True)
    with open(CLIENT_DIR / ".codegen-env.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists() and stamp.read_text() == CODEGEN_REQUIREMENT:
            return executable
        venv.EnvBuilder(with_pip=True, clear=True).create(CODEGEN_ENV)
        subprocess.run(
            [str(CODEGEN_ENV / "bin" / "python"), "-m", "pip", "install", "-q",
             CODEGEN_REQUIREMENT],
            check=True,
        )
        stamp.write_text(CODEGEN_REQUIREMENT)
    return executable


@pytest.fixture(scope="session")
def ariadne_codegen() -> Path:
    return codegen_command()
