"""The pages a person may land on during sign-in, outside the console's script: "no access"
(the provider vouched for them, no rule grants them a role) and "sign-in did not complete".

Plain HTML with the console's style sheet and the console's security headers: no script."""

from __future__ import annotations

from html import escape

from starlette.requests import Request
from starlette.responses import HTMLResponse

from server.console import security_headers

_PAGE = """<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="referrer" content="no-referrer" />
    <title>{title} · Casework</title>
    <link rel="icon" href="/console/favicon.svg" type="image/svg+xml" />
    <link rel="stylesheet" href="/console/console.css" />
  </head>
  <body>
    <main class="signin" id="main">
      <div class="signin-card">
        <div class="brand brand-large"><span class="brand-mark" aria-hidden="true"></span>
          Casework</div>
        <h1>{title}</h1>
{body}
      </div>
    </main>
  </body>
</html>
"""


def _page(request: Request, title: str, body: str, status_code: int) -> HTMLResponse:
    response = HTMLResponse(_PAGE.format(title=escape(title), body=body), status_code=status_code)
    for name, value in security_headers(request.scope):
        response.headers[name.decode()] = value.decode()
    return response


def no_access_page(
    request: Request, *, who: str, subject: str, provider: str, reason: str
) -> HTMLResponse:
    """403: signed in at the provider, granted nothing here. Says who, and what to ask for."""
    body = f"""        <p>You are signed in at {escape(provider)} as <strong>{escape(who)}</strong>
          (subject <code>{escape(subject)}</code>), but you have no role in Casework yet.</p>
        <div class="notice notice-warning" role="status">
          <p class="notice-title">An administrator must grant you a role</p>
          <p>Ask your Casework administrator to give you access: they add you to a group
            that a sign-in rule maps to a role, or add a rule for you. Then sign in again.</p>
          <p>Why: {escape(reason)}.</p>
        </div>
        <p><a class="button button-quiet" href="/auth/login?prompt=login">Sign in as someone
          else</a></p>"""
    return _page(request, "No access to Casework", body, 403)


def sign_in_failed_page(request: Request, *, reason: str, status_code: int = 400) -> HTMLResponse:
    """The provider said no, or the login state is gone (an old tab, a cookie refused)."""
    body = f"""        <div class="notice notice-error" role="alert">
          <p class="notice-title">The sign-in did not complete</p>
          <p>{escape(reason)}</p>
        </div>
        <p><a class="button button-primary" href="/auth/login">Try again</a>
          <a class="button button-quiet" href="/console/">Back to the console</a></p>"""
    return _page(request, "Sign-in did not complete", body, status_code)
