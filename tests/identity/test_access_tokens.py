"""Access and logout tokens are verified against the real provider's discovery and JWKS
(tests/identity/oidc.py); refusal tokens are forged with the provider's own private keys, so
each fails for the one reason its test names."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import parse_qs

import pytest
from joserfc import jwt
from joserfc.jwk import Key, RSAKey

from server.domain.identity.access_tokens import (
    BACKCHANNEL_LOGOUT_EVENT,
    AccessTokenRefused,
    AccessTokenVerifier,
    LogoutTokenRefused,
    ProviderUnavailable,
    RefusalReason,
)
from tests.apply.receiver import webhook_receiver
from tests.identity.oidc import OidcProvider, generate_key

ALICE = {
    "groups": ["kyc-reviewers"],
    "name": "Alice Example",
    "preferred_username": "alice",
    "email": "alice@example.test",
}
Verifiers = Callable[..., AccessTokenVerifier]


@pytest.fixture
async def verifiers() -> AsyncIterator[Verifiers]:
    """Makes verifiers (closed at the end) for a provider, with options."""
    made: list[AccessTokenVerifier] = []

    def make(provider: OidcProvider, **options: Any) -> AccessTokenVerifier:
        verifier = AccessTokenVerifier(provider.issuer, provider.api_audience, **options)
        made.append(verifier)
        return verifier

    yield make
    for verifier in made:
        await verifier.aclose()


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def access_claims(provider: OidcProvider, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "sub": "forged-subject",
        "aud": provider.api_audience,
        "client_id": provider.integration.client_id,
        "scope": provider.api_scope,
        "iat": now,
        "exp": now + 300,
        "jti": secrets.token_hex(8),
    }
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


def forge(
    provider: OidcProvider,
    claims: dict[str, Any],
    *,
    alg: str = "RS256",
    key: Key | None = None,
    typ: str | None = "at+jwt",
) -> str:
    key = key or provider.signing_key(alg)
    header: dict[str, Any] = {"alg": alg, "kid": key.kid}
    if typ is not None:
        header["typ"] = typ
    return jwt.encode(header, claims, key, algorithms=[alg])


async def refusal(verifier: AccessTokenVerifier, token: str) -> AccessTokenRefused:
    with pytest.raises(AccessTokenRefused) as refused:
        await verifier.verify(token)
    return refused.value


# -- accepted ---------------------------------------------------------------------------------


async def test_a_client_credentials_token_is_accepted(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    token = await oidc_provider.client_credentials_token()

    verified = await verifiers(oidc_provider).verify(token)

    assert verified.issuer == oidc_provider.issuer
    assert verified.subject == oidc_provider.integration.client_id
    assert verified.client_id == oidc_provider.integration.client_id
    assert verified.claims["groups"] == ["integrations"]
    assert verified.expires_at > verified.issued_at  # type: ignore[operator]


async def test_an_access_token_from_a_code_flow_login_is_accepted(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    oidc_provider.set_account("alice", ALICE)
    tokens = await oidc_provider.code_flow_tokens("alice")

    verified = await verifiers(oidc_provider).verify(tokens.access_token)

    assert verified.subject == "alice"
    assert verified.client_id == oidc_provider.console.client_id
    assert verified.claims["groups"] == ["kyc-reviewers"]


async def test_each_key_type_the_provider_signs_with_is_accepted(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    """The forgeries below differ from these only in what their tests name."""
    verifier = verifiers(oidc_provider)
    for alg in ("RS256", "ES256"):
        token = forge(oidc_provider, access_claims(oidc_provider), alg=alg)
        assert (await verifier.verify(token)).subject == "forged-subject"


async def test_typ_jwt_is_accepted_only_when_configured(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    token = forge(oidc_provider, access_claims(oidc_provider), typ="JWT")

    assert (await refusal(verifiers(oidc_provider), token)).reason is RefusalReason.TYPE
    verified = await verifiers(oidc_provider, accept_typ_jwt=True).verify(token)
    assert verified.subject == "forged-subject"


# -- refused ----------------------------------------------------------------------------------


async def test_alg_none_is_refused(oidc_provider: OidcProvider, verifiers: Verifiers) -> None:
    header = {"alg": "none", "typ": "at+jwt"}
    claims = access_claims(oidc_provider)
    token = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}."

    refused = await refusal(verifiers(oidc_provider), token)

    assert refused.reason is RefusalReason.ALGORITHM


async def test_an_hmac_token_signed_with_the_public_key_is_refused(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    key = oidc_provider.signing_key("RS256")
    assert isinstance(key, RSAKey)
    public_pem = key.as_pem(private=False)
    header = {"alg": "HS256", "typ": "at+jwt", "kid": key.kid}
    claims = access_claims(oidc_provider)
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()

    refused = await refusal(verifiers(oidc_provider), f"{signing_input}.{b64(signature)}")

    assert refused.reason is RefusalReason.ALGORITHM


def test_a_verifier_cannot_be_told_to_accept_hmac_or_none() -> None:
    for algorithms in (("RS256", "HS256"), ("none",), ()):
        with pytest.raises(ValueError, match="asymmetric"):
            AccessTokenVerifier("https://idp.test", "https://api.test", algorithms=algorithms)


async def test_a_wrong_issuer_is_refused(oidc_provider: OidcProvider, verifiers: Verifiers) -> None:
    token = forge(oidc_provider, access_claims(oidc_provider, iss=f"{oidc_provider.issuer}/"))

    refused = await refusal(verifiers(oidc_provider), token)

    assert refused.reason is RefusalReason.ISSUER


async def test_a_wrong_audience_is_refused(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    token = forge(
        oidc_provider, access_claims(oidc_provider, aud=["https://another.test/api", "x"])
    )

    refused = await refusal(verifiers(oidc_provider), token)

    assert refused.reason is RefusalReason.AUDIENCE


async def test_an_expired_token_is_refused_past_the_leeway(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    now = int(time.time())
    within_leeway = forge(oidc_provider, access_claims(oidc_provider, exp=now - 10))
    expired = forge(oidc_provider, access_claims(oidc_provider, exp=now - 60, iat=now - 400))
    verifier = verifiers(oidc_provider, leeway_seconds=30)

    assert (await verifier.verify(within_leeway)).subject == "forged-subject"
    assert (await refusal(verifier, expired)).reason is RefusalReason.EXPIRED


async def test_a_token_not_yet_valid_is_refused(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    token = forge(oidc_provider, access_claims(oidc_provider, nbf=int(time.time()) + 120))

    refused = await refusal(verifiers(oidc_provider), token)

    assert refused.reason is RefusalReason.NOT_YET_VALID


async def test_an_id_token_is_not_an_access_token(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    oidc_provider.set_account("alice", ALICE)
    id_token = (await oidc_provider.code_flow_tokens("alice")).id_token
    assert id_token is not None

    for verifier in (verifiers(oidc_provider), verifiers(oidc_provider, accept_typ_jwt=True)):
        refused = await refusal(verifier, id_token)
        assert refused.reason is RefusalReason.ID_TOKEN
        assert oidc_provider.console.client_id in refused.detail


async def test_with_typ_jwt_accepted_a_token_with_a_nonce_is_refused_as_an_id_token(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    """An ID token whose audience happens to be the API's still carries a nonce."""
    token = forge(oidc_provider, access_claims(oidc_provider, nonce="n-0S6"), typ="JWT")

    refused = await refusal(verifiers(oidc_provider, accept_typ_jwt=True), token)

    assert refused.reason is RefusalReason.ID_TOKEN


async def test_a_token_over_8_kib_is_refused_before_parsing(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    token = forge(oidc_provider, access_claims(oidc_provider, padding="x" * 8192))
    fetches = oidc_provider.jwks_fetches()

    refused = await refusal(verifiers(oidc_provider), token)

    assert refused.reason is RefusalReason.TOO_LARGE
    assert oidc_provider.jwks_fetches() == fetches


async def test_a_signature_by_another_key_with_the_providers_kid_is_refused(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    kid = oidc_provider.signing_key().kid
    assert kid is not None
    impostor = RSAKey.generate_key(2048, parameters={"kid": kid})

    token = forge(oidc_provider, access_claims(oidc_provider), key=impostor)

    assert (await refusal(verifiers(oidc_provider), token)).reason is RefusalReason.SIGNATURE


# -- keys -------------------------------------------------------------------------------------


async def test_a_token_signed_with_a_retired_key_is_refused(
    fresh_oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    provider = fresh_oidc_provider
    old_token = await provider.client_credentials_token()
    verifier = verifiers(provider, refetch_interval_seconds=0)
    assert (await verifier.verify(old_token)).subject == provider.integration.client_id

    provider.rotate_keys(keep_old=False)
    fetches = provider.jwks_fetches()
    new_token = await provider.client_credentials_token()
    assert (await verifier.verify(new_token)).subject == provider.integration.client_id
    assert provider.jwks_fetches() == fetches + 1

    refused = await refusal(verifier, old_token)
    assert refused.reason is RefusalReason.UNKNOWN_KEY
    # A verifier that never saw the old key refuses it too.
    assert (await refusal(verifiers(provider), old_token)).reason is RefusalReason.UNKNOWN_KEY


async def test_an_unknown_kid_after_rotation_is_fetched_and_accepted(
    fresh_oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    provider = fresh_oidc_provider
    verifier = verifiers(provider, refetch_interval_seconds=0)
    old_token = await provider.client_credentials_token()
    await verifier.verify(old_token)
    fetches = provider.jwks_fetches()

    new_keys = provider.rotate_keys(keep_old=True)
    new_token = await provider.client_credentials_token()
    header, _ = provider.decode_unverified(new_token)
    assert header["kid"] in {key.kid for key in new_keys}

    assert (await verifier.verify(new_token)).subject == provider.integration.client_id
    assert provider.jwks_fetches() == fetches + 1
    # The old key is still published, and still cached.
    assert (await verifier.verify(old_token)).subject == provider.integration.client_id
    assert provider.jwks_fetches() == fetches + 1


async def test_refetching_on_unknown_kids_is_rate_limited_and_shared(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    """A fetch counts for the interval, the first one included (as jose's remote JWKS)."""
    verifier = verifiers(oidc_provider, refetch_interval_seconds=60)
    fetches = oidc_provider.jwks_fetches()
    strangers = [
        forge(oidc_provider, access_claims(oidc_provider), key=generate_key("RS256"))
        for _ in range(3)
    ]

    # Many callers at once on a verifier with no keys yet: one fetch, which they share.
    results = await asyncio.gather(
        *(verifier.verify(token) for token in strangers * 4), return_exceptions=True
    )
    assert [getattr(result, "reason", result) for result in results] == [
        RefusalReason.UNKNOWN_KEY
    ] * 12
    assert oidc_provider.jwks_fetches() == fetches + 1
    # Within the interval, unknown kids fetch nothing more; the known key still works.
    for token in strangers:
        assert (await refusal(verifier, token)).reason is RefusalReason.UNKNOWN_KEY
    await verifier.verify(forge(oidc_provider, access_claims(oidc_provider)))
    assert oidc_provider.jwks_fetches() == fetches + 1


async def test_the_last_good_keys_are_kept_while_the_provider_is_down(
    fresh_oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    provider = fresh_oidc_provider
    token = await provider.client_credentials_token()
    verifier = verifiers(provider, refetch_interval_seconds=0, max_key_age_seconds=0)
    assert (await verifier.verify(token)).subject == provider.integration.client_id

    provider.stop()

    # Every verification now tries to refetch (the keys are "old"), fails, and keeps them.
    assert (await verifier.verify(token)).subject == provider.integration.client_id
    stranger = forge(provider, access_claims(provider), key=generate_key("RS256"))
    refused = await refusal(verifier, stranger)
    assert refused.reason is RefusalReason.UNKNOWN_KEY
    assert "could not be fetched" in refused.detail
    # A verifier that never had keys cannot tell: an outage, not a refusal.
    with pytest.raises(ProviderUnavailable):
        await verifiers(provider).verify(token)


# -- back-channel logout tokens ---------------------------------------------------------------


def logout_claims(provider: OidcProvider, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    claims = {
        "iss": provider.issuer,
        "aud": provider.console.client_id,
        "sub": "alice",
        "sid": "a-session",
        "iat": now,
        "exp": now + 300,
        "jti": secrets.token_hex(8),
        "events": {BACKCHANNEL_LOGOUT_EVENT: {}},
    }
    claims.update(changes)
    return {name: value for name, value in claims.items() if value is not None}


async def logout_refusal(
    provider: OidcProvider, verifier: AccessTokenVerifier, token: str
) -> LogoutTokenRefused:
    with pytest.raises(LogoutTokenRefused) as refused:
        await verifier.verify_logout_token(token, client_id=provider.console.client_id)
    return refused.value


async def test_the_providers_own_logout_token_is_accepted(
    fresh_oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    provider = fresh_oidc_provider
    provider.set_account("alice", ALICE)
    async with webhook_receiver("unused") as receiver:
        provider.configure_console(backchannel_logout_uri=receiver.url)
        id_token = (await provider.code_flow_tokens("alice")).id_token
        assert id_token is not None
        sid = provider.decode_unverified(id_token)[1]["sid"]

        sent = await provider.send_backchannel_logout("alice", sid)

        assert sent.status_code == 204, sent.text
        form = parse_qs(receiver.requests[-1].body.decode())
    logout = await verifiers(provider).verify_logout_token(
        form["logout_token"][0], client_id=provider.console.client_id
    )

    assert (logout.issuer, logout.subject, logout.sid) == (provider.issuer, "alice", sid)
    assert logout.jti


async def test_a_forged_logout_token_in_the_providers_shape_is_accepted(
    oidc_provider: OidcProvider, verifiers: Verifiers
) -> None:
    token = forge(oidc_provider, logout_claims(oidc_provider), typ="logout+jwt")

    logout = await verifiers(oidc_provider).verify_logout_token(
        token, client_id=oidc_provider.console.client_id
    )

    assert (logout.subject, logout.sid) == ("alice", "a-session")


@pytest.mark.parametrize(
    ("changes", "typ", "reason"),
    [
        ({"nonce": "n-0S6"}, "logout+jwt", RefusalReason.NONCE),
        ({"events": None}, "logout+jwt", RefusalReason.NOT_A_LOGOUT_EVENT),
        (
            {"events": {"http://example.test/other": {}}},
            "logout+jwt",
            RefusalReason.NOT_A_LOGOUT_EVENT,
        ),
        ({"aud": "another-client"}, "logout+jwt", RefusalReason.AUDIENCE),
        ({"jti": None}, "logout+jwt", RefusalReason.MISSING_CLAIM),
        ({"sub": None, "sid": None}, "logout+jwt", RefusalReason.MISSING_CLAIM),
        ({"iat": int(time.time()) + 3600}, "logout+jwt", RefusalReason.ISSUED_AT),
        ({}, "at+jwt", RefusalReason.TYPE),
        ({"iss": "https://elsewhere.test"}, "logout+jwt", RefusalReason.ISSUER),
    ],
    ids=[
        "nonce",
        "no-events",
        "other-event",
        "wrong-aud",
        "no-jti",
        "no-sub-or-sid",
        "future",
        "access-token-typ",
        "wrong-issuer",
    ],
)
async def test_a_logout_token_is_refused(
    oidc_provider: OidcProvider,
    verifiers: Verifiers,
    changes: dict[str, Any],
    typ: str,
    reason: RefusalReason,
) -> None:
    token = forge(oidc_provider, logout_claims(oidc_provider, **changes), typ=typ)

    refused = await logout_refusal(oidc_provider, verifiers(oidc_provider), token)

    assert refused.reason is reason
