"""The provider's access tokens as principals: verified (access_tokens.py), mapped to grants
by the rules (rules.py), and refused when their person was revoked after they were issued."""

from __future__ import annotations

import logging

from server.config import AuthSettings, ConfigError
from server.domain.identity.access_tokens import AccessTokenRefused, AccessTokenVerifier
from server.domain.identity.grants import NoAccess, acting_principal
from server.domain.identity.people import person_seen
from server.domain.identity.rules import RuleFileError, RuleSet
from server.domain.model import Authentication, CredentialKind, Principal
from server.store.database import Database

log = logging.getLogger("casework.identity")


class ProviderAccessTokens:
    """What CredentialResolver asks of a bearer token that is not a CLI token."""

    def __init__(self, db: Database, verifier: AccessTokenVerifier, rules: RuleSet) -> None:
        self._db = db
        self._verifier = verifier
        self._rules = rules

    async def principal(self, token: str, role: str | None) -> Principal | None:
        try:
            verified = await self._verifier.verify(token)
        except AccessTokenRefused as refusal:
            # A client's mistake (or an attacker's): one line, never the token.
            log.info("access token refused: %s: %s", refusal.reason, refusal.detail)
            return None
        # Grants are computed afresh from each token's claims: a group removed at the
        # provider is gone with the next token.
        explanation = self._rules.explain(verified.claims)
        if not explanation.grants:
            raise NoAccess(explanation.refusal or "no rule grants this identity any role")
        person = await person_seen(self._db, verified.issuer, verified.claims)
        if person.refuses(verified.issued_at):
            log.info("access token refused: %s was revoked after it was issued", person.user_name)
            return None
        return await acting_principal(
            self._db,
            user=person.user_name,
            display_name=person.display_name,
            grants=explanation.grants,
            requested_role=role,
            expires_at=verified.expires_at,
            authentication=Authentication(
                kind=CredentialKind.JWT,
                issuer=verified.issuer,
                subject=verified.subject,
                client_id=verified.client_id,
                auth_time=verified.auth_time,
                acr=verified.acr,
            ),
        )


def load_rules(settings: AuthSettings) -> RuleSet | None:
    """The claim-mapping rules, when sign-in with the provider is on."""
    if not settings.oidc or settings.rules_file is None:
        return None
    try:
        return RuleSet.load(settings.rules_file)
    except (RuleFileError, OSError) as error:
        raise ConfigError(f"CASEWORK_AUTH_RULES: {error}") from error


def provider_verifier(settings: AuthSettings) -> AccessTokenVerifier:
    assert settings.oidc_issuer is not None
    assert settings.oidc_audience is not None
    return AccessTokenVerifier(
        settings.oidc_issuer,
        settings.oidc_audience,
        algorithms=settings.oidc_algorithms,
        accept_typ_jwt=settings.oidc_accept_typ_jwt,
    )
