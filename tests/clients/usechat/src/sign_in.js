// Signing the app's user in with an OpenID provider: authorization code with PKCE, run in the browser
// (no backend, no client secret), as a React app on its own origin would. The access token lives in
// this tab's session storage and goes to chatgate as `Authorization: Bearer` (main.jsx).
//
// `settings` has the shape of chatgate's GET /sign-in.json: {issuer, client_id, params}, where `params`
// are added to the authorization request and, except `scope` and `prompt`, to the token request (what
// the provider needs to issue a token for chatgate's audience: `resource`, Auth0's `audience`...).
// The redirect URI is this page's address without its query; the query is kept across the round trip.

const TOKEN = "usechat.token";
const PENDING = "usechat.sign-in";

const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const randomText = () => base64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => `${location.origin}${location.pathname}`;

async function discover(issuer) {
  const response = await fetch(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`);
  if (!response.ok) throw new Error(`the sign-in provider did not answer (${response.status})`);
  return response.json();
}

/** Send the user to the provider's sign-in; the page leaves, so this never resolves. */
async function redirectToSignIn(settings) {
  const { authorization_endpoint: authorize } = await discover(settings.issuer);
  const verifier = randomText();
  const state = randomText();
  const challenge = base64url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, search: location.search }));
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

/**
 * Back from the provider with ?code=&state= (or ?error=): put the app's own query back in the address bar
 * at once, so the app reads its options as before; returns the provider's answer for `signIn`, else null.
 */
export function takeSignInAnswer() {
  const answer = new URLSearchParams(location.search);
  if (!answer.has("code") && !answer.has("error")) return null;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? "null");
  sessionStorage.removeItem(PENDING);
  history.replaceState(null, "", `${location.pathname}${pending?.search ?? ""}${location.hash}`);
  return { answer, pending };
}

async function trade(settings, { answer, pending }) {
  if (answer.has("error")) throw new Error(`sign-in failed: ${answer.get("error_description") ?? answer.get("error")}`);
  const issuer = answer.get("iss"); // RFC 9207: the answer names who sent it, against mix-up attacks
  if (!pending || pending.state !== answer.get("state") || (issuer !== null && issuer !== settings.issuer)) {
    throw new Error("sign-in failed: the answer does not match this tab's request");
  }
  const { token_endpoint: endpoint } = await discover(settings.issuer);
  const { scope, prompt, ...kept } = settings.params ?? {};
  const response = await fetch(endpoint, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      ...kept,
      grant_type: "authorization_code",
      client_id: settings.client_id,
      code: answer.get("code"),
      redirect_uri: redirectUri(),
      code_verifier: pending.verifier,
    }),
  });
  const token = await response.json();
  if (!response.ok || !token.access_token) throw new Error(`the provider refused the code (${response.status})`);
  const expires = Date.now() + (token.expires_in ?? 300) * 1000;
  sessionStorage.setItem(TOKEN, JSON.stringify({ access: token.access_token, expires }));
}

/**
 * The signed-in user's access token: trades the provider's answer (from `takeSignInAnswer`) for one, or
 * keeps the stored one while fresh, or sends the user to sign in (then never resolves).
 */
export async function signIn(settings, returned = null) {
  if (returned) await trade(settings, returned);
  const token = JSON.parse(sessionStorage.getItem(TOKEN) ?? "null");
  if (token && token.expires > Date.now() + 10_000) return token.access;
  sessionStorage.removeItem(TOKEN);
  return redirectToSignIn(settings);
}

/** Who the token names (its `sub`), to show; chatgate verifies the token itself. */
export function subjectOf(token) {
  const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
  return JSON.parse(atob(payload)).sub;
}
