// A real OpenID Connect provider for Casework's identity tests: the npm `oidc-provider`
// (pinned in package.json), configured from a JSON file the Python fixture writes
// (tests/identity/oidc.py). Never shipped, never used outside the tests.
//
//   node provider.mjs CONFIG.json
//
// CONFIG.json:
//   port            0 for any free port (the first start), or the port to listen on again (a
//                   restart keeps the issuer, so relying parties keep trusting it)
//   jwks            {keys: [private JWKs]}: the first key of a type signs
//   clients         oidc-provider client metadata (snake_case), as given
//   client_claims   {client_id: {claim: value}}: added to that client's client-credentials tokens
//   api_audience    the resource indicator (Casework's API identifier) access tokens are for
//   api_scope       the scope the API defines
//   access_token_alg  the alg of the API's at+jwt access tokens
//   accounts_file   {sub: {claim: value}}: read at every lookup, so a test may rewrite it
//   request_log     a file that receives one JSON line per request (method, path), before it is
//                   handled
//   ttl             {AccessToken, ClientCredentials, IdToken, RefreshToken, Session, Grant}
//
// Once listening it prints one line on stdout: `READY {"issuer": ..., "port": ...}`. Everything
// else goes to stderr.
//
// Besides the protocol, one test route (not part of any standard):
//   POST /test/backchannel-logout {client_id, sub, sid}: the provider sends that client its
//   back-channel logout token, as it does at the end of a session, and answers 204 when the
//   client accepted it (502 with the reason otherwise).
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';

import Provider from 'oidc-provider';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const log = (...args) => console.error(...args);

function accounts() {
  try {
    return JSON.parse(readFileSync(config.accounts_file, 'utf8'));
  } catch (error) {
    if (error.code === 'ENOENT') return {};
    throw error;
  }
}

// The claims an account has now; undefined when the account is gone (a person who left).
function claimsOf(sub) {
  const claims = accounts()[sub];
  return claims === undefined ? undefined : { ...claims, sub };
}

const ALL_SCOPES = 'openid profile email groups offline_access';
const PERSON_CLAIMS_IN_ACCESS_TOKENS = ['groups', 'name', 'preferred_username', 'email'];

function configuration() {
  const audience = config.api_audience;
  const resourceServer = {
    scope: config.api_scope,
    audience,
    accessTokenTTL: config.ttl.AccessToken,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: config.access_token_alg } },
  };
  return {
    clients: config.clients,
    jwks: config.jwks,
    cookies: {
      keys: ['casework-test-provider-cookie-key'],
      // SameSite=None cookies need Secure, which plain http on 127.0.0.1 cannot give.
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    scopes: ALL_SCOPES.split(' '),
    claims: {
      openid: ['sub'],
      profile: ['name', 'preferred_username'],
      email: ['email'],
      groups: ['groups'],
    },
    // ID tokens carry the claims of the granted scopes even when an access token is issued
    // (the access token is for the API, not for the userinfo endpoint).
    conformIdTokenClaims: false,
    async findAccount(ctx, sub) {
      if (claimsOf(sub) === undefined) return undefined;
      return {
        accountId: sub,
        // Read again at each use: a test that rewrites the accounts file sees it at the next
        // login or refresh.
        async claims() {
          return claimsOf(sub) ?? { sub };
        },
      };
    },
    // First-party clients: no consent page. The grant covers every scope and the API.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) {
        const existing = await ctx.oidc.provider.Grant.find(grantId);
        if (existing) return existing;
      }
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId,
        accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope(ALL_SCOPES);
      grant.addResourceScope(audience, config.api_scope);
      await grant.save();
      return grant;
    },
    // A refresh token whenever the client may use one (no offline_access + consent dance).
    async issueRefreshToken(ctx, client) {
      return client.grantTypeAllowed('refresh_token');
    },
    async extraTokenClaims(ctx, token) {
      if (token.kind === 'ClientCredentials') return config.client_claims[token.clientId];
      if (token.kind === 'AccessToken' && token.accountId) {
        const claims = claimsOf(token.accountId) ?? {};
        return Object.fromEntries(PERSON_CLAIMS_IN_ACCESS_TOKENS
          .filter((name) => name in claims).map((name) => [name, claims[name]]));
      }
      return undefined;
    },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo(ctx, resourceIndicator) {
          if (resourceIndicator === audience) return resourceServer;
          throw new Provider.errors.InvalidTarget();
        },
      },
    },
    pkce: { required: () => true, methods: ['S256'] },
    ttl: config.ttl,
    renderError(ctx, out) {
      ctx.type = 'json';
      ctx.body = out;
    },
  };
}

async function backchannelLogout(provider, ctx) {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const { client_id: clientId, sub, sid } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const client = await provider.Client.find(clientId);
  if (!client || !client.backchannelLogoutUri) {
    ctx.status = 400;
    ctx.body = { error: `client ${clientId} has no backchannel_logout_uri` };
    return;
  }
  try {
    await client.backchannelLogout(sub, sid);
    ctx.status = 204;
  } catch (error) {
    ctx.status = 502;
    ctx.body = { error: error.message };
  }
}

const server = createServer();
server.listen(config.port, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, configuration());
  provider.use(async (ctx, next) => {
    if (config.request_log) {
      appendFileSync(config.request_log, `${JSON.stringify({ method: ctx.method, path: ctx.path })}\n`);
    }
    if (ctx.method === 'POST' && ctx.path === '/test/backchannel-logout') {
      await backchannelLogout(provider, ctx);
      return;
    }
    await next();
  });
  for (const event of ['server_error', 'backchannel.error', 'grant.error']) {
    provider.on(event, (ctx, error) => log(event, error));
  }
  server.on('request', provider.callback());
  process.stdout.write(`READY ${JSON.stringify({ issuer, port })}\n`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
