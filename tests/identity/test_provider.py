"""The test provider itself (tests/identity/oidc.py): what the identity tests rely on it for,
checked against a throwaway relying party (a recording HTTP receiver) and Chromium."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest
from playwright.async_api import async_playwright

from tests.apply.receiver import Receiver, webhook_receiver
from tests.console.helpers import CHROMIUM_ARGS, chromium_executable
from tests.identity.oidc import OidcProvider
from tests.identity.provider_process import PROVIDER_DIR

ALICE = {"groups": ["kyc-reviewers", "approvers"], "name": "Alice", "preferred_username": "alice"}


def code_of(receiver: Receiver) -> dict[str, list[str]]:
    return parse_qs(urlsplit(receiver.requests[-1].path).query)


async def next_callback_state(rp: Receiver) -> str:
    """The state of the next authorization response to arrive (a favicon request skipped)."""
    while True:
        query = parse_qs(urlsplit((await rp.next_arrival()).path).query)
        if "code" in query:
            return query["state"][0]


def test_the_package_lock_pins_oidc_provider_8_8_1() -> None:
    lock = json.loads((PROVIDER_DIR / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/oidc-provider"]["version"] == "8.8.1"
    package = json.loads((PROVIDER_DIR / "package.json").read_text())
    assert package["dependencies"]["oidc-provider"] == "8.8.1"


async def test_discovery_names_the_issuer_and_the_logout_features(
    oidc_provider: OidcProvider,
) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.get(oidc_provider.url("/.well-known/openid-configuration"))
    document = response.json()

    assert document["issuer"] == oidc_provider.issuer
    assert document["backchannel_logout_supported"] is True
    assert document["backchannel_logout_session_supported"] is True
    assert document["end_session_endpoint"] == oidc_provider.url("/session/end")
    assert document["code_challenge_methods_supported"] == ["S256"]


async def test_login_with_http_lands_on_the_relying_partys_redirect_uri(
    fresh_oidc_provider: OidcProvider,
) -> None:
    provider = fresh_oidc_provider
    provider.set_account("alice", ALICE)
    async with webhook_receiver("unused") as rp:
        provider.configure_console(redirect_uris=[rp.url])
        request = provider.authorization_request(rp.url)
        async with httpx.AsyncClient() as http:
            answer = await provider.login_with_http(http, request.url, "alice")

        assert answer.status_code == 200
        assert code_of(rp)["state"] == [request.state]
        tokens = await provider.exchange_code(
            request, f"{rp.url}?{urlsplit(rp.requests[-1].path).query}"
        )
    _, id_claims = provider.decode_unverified(tokens.id_token or "")
    assert (id_claims["sub"], id_claims["nonce"]) == ("alice", request.nonce)
    assert id_claims["groups"] == ["kyc-reviewers", "approvers"]
    assert id_claims["sid"]


async def test_a_removed_group_is_gone_at_the_next_refresh(oidc_provider: OidcProvider) -> None:
    oidc_provider.set_account("bob", {"groups": ["kyc-reviewers", "approvers"]})
    tokens = await oidc_provider.code_flow_tokens("bob")
    assert tokens.refresh_token

    oidc_provider.set_account("bob", {"groups": ["kyc-reviewers"]})
    refreshed = await oidc_provider.refresh(tokens.refresh_token)

    assert oidc_provider.decode_unverified(refreshed.access_token)[1]["groups"] == ["kyc-reviewers"]
    assert oidc_provider.decode_unverified(refreshed.id_token or "")[1]["groups"] == [
        "kyc-reviewers"
    ]


async def test_a_removed_account_cannot_refresh(oidc_provider: OidcProvider) -> None:
    oidc_provider.set_account("carol", {"groups": ["kyc-reviewers"]})
    tokens = await oidc_provider.code_flow_tokens("carol")
    assert tokens.refresh_token

    oidc_provider.remove_account("carol")

    with pytest.raises(httpx.HTTPStatusError) as refused:
        await oidc_provider.refresh(tokens.refresh_token)
    assert refused.value.response.json()["error"] == "invalid_grant"


async def test_rp_initiated_logout_sends_the_back_channel_logout_and_returns(
    fresh_oidc_provider: OidcProvider,
) -> None:
    provider = fresh_oidc_provider
    provider.set_account("alice", ALICE)
    async with webhook_receiver("unused") as rp:
        back = f"{rp.url}/backchannel"
        after = f"{rp.url}/signed-out"
        provider.configure_console(
            redirect_uris=[rp.url], post_logout_redirect_uris=[after], backchannel_logout_uri=back
        )
        request = provider.authorization_request(rp.url)
        async with httpx.AsyncClient() as http:
            await provider.login_with_http(http, request.url, "alice")
            callback = f"{rp.url}?{urlsplit(rp.requests[-1].path).query}"
            tokens = await provider.exchange_code(request, callback)
            end = provider.url(
                "/session/end?"
                + urlencode({"id_token_hint": tokens.id_token, "post_logout_redirect_uri": after})
            )
            answer = await provider.logout_with_http(http, end)

        assert str(answer.url) == after
        posted = [r for r in rp.requests if r.method == "POST" and r.path.endswith("/backchannel")]
    assert len(posted) == 1
    logout_token = parse_qs(posted[0].body.decode())["logout_token"][0]
    header, claims = provider.decode_unverified(logout_token)
    assert header["typ"] == "logout+jwt"
    sid = provider.decode_unverified(tokens.id_token or "")[1]["sid"]
    assert (claims["sub"], claims["sid"], claims["aud"]) == (
        "alice",
        sid,
        provider.console.client_id,
    )


async def test_rotating_keys_keeps_the_issuer_and_signs_with_the_new_key(
    fresh_oidc_provider: OidcProvider,
) -> None:
    provider = fresh_oidc_provider
    issuer = provider.issuer
    before = provider.decode_unverified(await provider.client_credentials_token())[0]["kid"]

    new = provider.rotate_keys(keep_old=False)

    after = provider.decode_unverified(await provider.client_credentials_token())[0]["kid"]
    assert provider.issuer == issuer
    assert after == new[0].kid != before
    async with httpx.AsyncClient() as http:
        published = {key["kid"] for key in (await http.get(provider.url("/jwks"))).json()["keys"]}
    assert published == {key.kid for key in new}


async def test_a_browser_logs_in_on_the_login_page_and_keeps_its_provider_session(
    fresh_oidc_provider: OidcProvider,
) -> None:
    """Playwright drives the same pages; the provider's cookies work over http on 127.0.0.1,
    so a second authorization needs no login."""
    provider = fresh_oidc_provider
    provider.set_account("alice", ALICE)
    async with webhook_receiver("unused") as rp:
        provider.configure_console(redirect_uris=[rp.url])
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(
                executable_path=chromium_executable(), args=CHROMIUM_ARGS
            )
            try:
                page = await browser.new_page()
                first = provider.authorization_request(rp.url)
                await page.goto(first.url)
                await page.fill("input[name=login]", "alice")
                await page.fill("input[name=password]", "any")
                await page.click("button[type=submit]")
                assert await next_callback_state(rp) == first.state

                second = provider.authorization_request(rp.url)
                await page.goto(second.url)
                # No login page in between: straight back with a code.
                assert await next_callback_state(rp) == second.state
            finally:
                await browser.close()
