// Signing a person in with the server's identity provider, when [auth.jwt] page_client_id is set:
// the authorization code flow with PKCE, run by the page itself. The access token (and refresh token)
// live in this tab's session storage only; an expired token is refreshed, or the person is sent to
// sign in again.

const TOKEN = "chatgate.token";
const PENDING = "chatgate.sign-in";
const EARLY_MS = 30_000; // refresh this long before the token expires

let settings = null;
let endpoints = null;

/** Whether the server wants people signed in (GET sign-in.json answers); reads its settings. */
export async function loadSignIn() {
  const response = await fetch("sign-in.json");
  if (!response.ok) return false;
  settings = await response.json();
  return true;
}

async function discover() {
  if (!endpoints) {
    const response = await fetch(`${settings.issuer.replace(/\/$/, "")}/.well-known/openid-configuration`);
    if (!response.ok) throw new Error(`The sign-in provider did not answer (${response.status}).`);
    endpoints = await response.json();
  }
  return endpoints;
}

function base64url(bytes) {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

const randomText = () => base64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => `${location.origin}${location.pathname}`;
const stored = () => JSON.parse(sessionStorage.getItem(TOKEN) ?? "null");

/** Send the person to the provider's sign-in; the page leaves, so this never resolves. */
export async function redirectToSignIn() {
  const { authorization_endpoint: authorize } = await discover();
  const verifier = randomText();
  const state = randomText();
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, hash: location.hash }));
  const url = new URL(authorize);
  const params = {
    ...settings.params,
    response_type: "code",
    client_id: settings.client_id,
    redirect_uri: redirectUri(),
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
  };
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  location.assign(url.toString());
  return new Promise(() => {});
}

/** Back from the provider (?code=...&state=...): trade the code for a token, and restore where we were. */
export async function finishSignIn() {
  const query = new URLSearchParams(location.search);
  if (!query.has("code") && !query.has("error")) return;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? "null");
  sessionStorage.removeItem(PENDING);
  history.replaceState(null, "", location.pathname + (pending?.hash ?? ""));
  if (query.has("error")) {
    throw new Error(`Sign-in failed: ${query.get("error_description") ?? query.get("error")}`);
  }
  const issuer = query.get("iss"); // RFC 9207: the answer names who sent it, against mix-up attacks
  if (!pending || pending.state !== query.get("state") || (issuer !== null && issuer !== settings.issuer)) {
    throw new Error("Sign-in failed: the answer does not match this tab's request. Reload to sign in again.");
  }
  const ok = await tokenRequest({
    grant_type: "authorization_code",
    code: query.get("code"),
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  });
  if (!ok) throw new Error("Sign-in failed: the provider refused the code. Reload to sign in again.");
}

async function tokenRequest(params) {
  const { token_endpoint: endpoint } = await discover();
  const { scope, prompt, ...kept } = settings.params; // the token endpoint takes the rest (resource, audience)
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...kept, client_id: settings.client_id, ...params }),
  });
  if (!response.ok) return false;
  const answer = await response.json();
  if (!answer.access_token) return false;
  sessionStorage.setItem(
    TOKEN,
    JSON.stringify({
      access: answer.access_token,
      refresh: answer.refresh_token ?? stored()?.refresh ?? null,
      expires: Date.now() + (answer.expires_in ?? 300) * 1000,
    }),
  );
  return true;
}

/** A token to send: the kept one while fresh, else refreshed, else the person signs in again. */
export async function accessToken() {
  const token = stored();
  if (token && token.expires - EARLY_MS > Date.now()) return token.access;
  if (token?.refresh && (await tokenRequest({ grant_type: "refresh_token", refresh_token: token.refresh }))) {
    return stored().access;
  }
  sessionStorage.removeItem(TOKEN);
  return redirectToSignIn();
}

/** The server refused the token: the next ``accessToken`` refreshes it (or signs in again). */
export function tokenRefused() {
  const token = stored();
  if (token) sessionStorage.setItem(TOKEN, JSON.stringify({ ...token, expires: 0 }));
}

/** Forget the tokens of this tab. */
export function signOut() {
  sessionStorage.removeItem(TOKEN);
}
