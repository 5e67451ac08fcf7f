"""The console's sign-in over HTTP (a backend-for-frontend): the OpenID Connect login, its
callback and the logout (`login.py`), the session cookie and the rules that protect requests
carrying it from other sites (`cookies.py`), and the pages a person may land on
(`pages.py`). The browser never holds an access, ID or refresh token: only the session
cookie, an opaque random id whose SHA-256 the database keeps. The provider's back-channel logout
(`backchannel.py`) ends a person's access when the provider says they logged out."""
