// A real OpenID provider (oidc-provider) on loopback for chatgate's sign-in token tests.
//
// usage: node server.mjs PORT
// Issuer http://127.0.0.1:PORT. Clients: "alice" and "bob" (client_credentials, secret "<id>-secret-0123456789"),
// whose access tokens are JWTs for audience "chatgate" (resource "urn:chatgate"; "urn:other" gives audience
// "other"), and "page" (authorization code + PKCE, public, refresh tokens) for the chat page and the useChat
// test app, whose addresses OIDC_PAGE_REDIRECTS lists (comma-separated) as its redirect URIs.
// Test-only routes beside the provider:
//   GET  /test/stats   -> {"jwks_fetches": n}: how often the JWKS was fetched
//   POST /test/rotate  -> new signing keys (the old ones are gone from the JWKS)
//   POST /test/sign    -> {"token"}: signs {"claims", "alg"?, "kid"?} with the current private key of that alg
import http from 'node:http';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const pageRedirects = (process.env.OIDC_PAGE_REDIRECTS || '').split(',').filter(Boolean);

let generation = 0;
let jwksFetches = 0;
let keys = {};

async function newKeys() {
  generation += 1;
  const out = {};
  for (const alg of ['RS256', 'ES256']) {
    const { privateKey } = await jose.generateKeyPair(alg, { extractable: true });
    const jwk = await jose.exportJWK(privateKey);
    out[alg] = { ...jwk, alg, use: 'sig', kid: `${alg.toLowerCase()}-${generation}` };
  }
  return out;
}

const clientClaims = {
  alice: { chatgate_agents: ['assistant', 'other'], roles: ['reader'] },
  bob: { chatgate_agents: ['assistant'], roles: ['chatgate-admin'] },
};

function newProvider() {
  const provider = new Provider(issuer, {
    clients: [
      ...['alice', 'bob'].map((id) => ({
        client_id: id,
        client_secret: `${id}-secret-0123456789`,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
        token_endpoint_auth_method: 'client_secret_post',
      })),
      {
        client_id: 'page',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: pageRedirects.length ? pageRedirects : ['http://127.0.0.1/'],
      },
    ],
    jwks: { keys: [keys.RS256, keys.ES256] },
    findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:chatgate',
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => ({
          scope: 'openid api offline_access',
          audience: resource === 'urn:chatgate' ? 'chatgate' : 'other',
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: resource === 'urn:chatgate' ? 'RS256' : 'ES256' } },
        }),
      },
    },
    ttl: { ClientCredentials: 300, AccessToken: 300 },
    extraTokenClaims: (ctx, token) => clientClaims[token.clientId] || {},
    issueRefreshToken: () => true,
    pkce: { required: () => true },
    clientBasedCORS: () => true,
  });
  provider.proxy = true;
  return provider.callback();
}

keys = await newKeys();
let handle = newProvider();

function readJson(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => { try { resolve(body ? JSON.parse(body) : {}); } catch (e) { reject(e); } });
  });
}

function reply(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

const server = http.createServer(async (req, res) => {
  try {
    if (req.url === '/test/stats') return reply(res, 200, { jwks_fetches: jwksFetches });
    if (req.url === '/test/rotate' && req.method === 'POST') {
      keys = await newKeys();
      handle = newProvider();
      return reply(res, 200, { kids: Object.values(keys).map((k) => k.kid) });
    }
    if (req.url === '/test/sign' && req.method === 'POST') {
      const { claims, alg = 'RS256', kid } = await readJson(req);
      const key = await jose.importJWK(keys[alg], alg);
      const token = await new jose.SignJWT(claims)
        .setProtectedHeader({ alg, typ: 'at+jwt', kid: kid || keys[alg].kid })
        .sign(key);
      return reply(res, 200, { token });
    }
    if (req.url.startsWith('/jwks')) jwksFetches += 1;
    return handle(req, res);
  } catch (error) {
    return reply(res, 500, { error: String(error) });
  }
});
server.listen(port, '127.0.0.1', () => console.log(`oidc ready ${issuer}`));
