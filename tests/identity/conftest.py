"""The identity suite's OpenID provider (tests/identity/oidc.py): one per test module, and a
fresh one for a test that rotates its keys or stops it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.identity.oidc import OidcProvider


@pytest.fixture(scope="module")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    """A running provider shared by a module's tests: change its accounts freely, but take
    `fresh_oidc_provider` to rotate keys, reconfigure clients or stop it."""
    provider = OidcProvider(tmp_path_factory.mktemp("oidc-provider"))
    provider.start()
    yield provider
    provider.stop()


@pytest.fixture
def fresh_oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    """A running provider of the test's own."""
    provider = OidcProvider(tmp_path_factory.mktemp("oidc-provider"))
    provider.start()
    yield provider
    provider.stop()
