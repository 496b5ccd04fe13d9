// A minimal useChat app for the browser tests: one source, built once per supported `ai` major
// (vite.config.js points `ai` and `@ai-sdk/react` at that major's packages).
//
// Query string: base (chatgate's base URL; default this page's origin), agent (default "default"),
// answer (what the frontend tool answers; default "red"), key (an API key sent as
// `Authorization: Bearer`; kept in memory only and dropped from the address bar at once),
// thread (a server-held thread id: the page loads GET .../threads/{id}/messages into useChat, each
// request sends only the newest message, as docs/conversations.md describes, and useChat's
// `resume: true` picks up an answer still streaming, GET .../chat/{id}/stream, as docs/resume.md describes),
// sign_in (JSON {issuer, client_id, params}, the shape of chatgate's GET /sign-in.json: the app signs its
// user in with that OpenID provider, authorization code + PKCE, src/sign_in.js, and sends the user's
// access token as `Authorization: Bearer` instead of a key; from the query for the tests only: a real app
// fixes its provider in its code, docs/identity.md).
// Everything a test reads or clicks carries a data-testid (tests/e2e/test_usechat_browser.py).

import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import * as ai from "ai";
import { signIn, subjectOf, takeSignInAnswer } from "./sign_in.js";

const returned = takeSignInAnswer(); // first: back from the provider, this restores the app's query
const params = new URLSearchParams(location.search);
const base = params.get("base") || location.origin;
const agent = params.get("agent") || "default";
const answer = params.get("answer") || "red";
const thread = params.get("thread");
const key = params.get("key");
if (key !== null) {
  params.delete("key");
  const query = params.toString();
  history.replaceState(null, "", `${location.pathname}${query ? `?${query}` : ""}${location.hash}`);
}
const signInSettings = params.has("sign_in") ? JSON.parse(params.get("sign_in")) : null;
// Every request asks for the signed-in user's token: the stored one while fresh, else a new sign-in.
const headers = signInSettings
  ? async () => ({ Authorization: `Bearer ${await signIn(signInSettings)}` })
  : () => (key ? { Authorization: `Bearer ${key}` } : {});
const agentUrl = `${base}/agents/${encodeURIComponent(agent)}`;
const FRONTEND_TOOL = "pick_color";

function resendWhen(options) {
  if (ai.lastAssistantMessageIsCompleteWithToolCalls(options)) return true;
  // ai 5 has no approvals, so no helper for them.
  const approvals = ai.lastAssistantMessageIsCompleteWithApprovalResponses;
  return approvals ? approvals(options) : false;
}

// A stored thread: the server holds the history, so a request carries only the newest message.
const newestOnly = ({ id, messages, trigger, messageId }) => ({
  body: { id, message: messages.at(-1), trigger, messageId },
});

const transport = new ai.DefaultChatTransport({
  api: `${agentUrl}/chat`,
  headers,
  ...(thread ? { prepareSendMessagesRequest: newestOnly } : {}),
});

async function loadThread() {
  const url = `${agentUrl}/threads/${encodeURIComponent(thread)}/messages`;
  const response = await fetch(url, { headers: await headers() });
  if (response.status === 404) return []; // a new thread: the first turn creates it
  if (!response.ok) throw new Error(`loading the thread failed: ${response.status} ${await response.text()}`);
  return (await response.json()).messages;
}

function toolName(part) {
  return part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
}

function Part({ part, chat }) {
  if (part.type === "text") return <p data-testid="part-text">{part.text}</p>;
  if (part.type === "reasoning") return <p data-testid="part-reasoning"><i>{part.text}</i></p>;
  if (!(part.type.startsWith("tool-") || part.type === "dynamic-tool")) return null;
  const name = toolName(part);
  // ai 6 renamed addToolResult to addToolOutput; ai 5 has only the old name in early releases.
  const addToolOutput = chat.addToolOutput ?? chat.addToolResult;
  return (
    <div data-testid="part-tool" data-tool-name={name} data-state={part.state}>
      <code>
        {name} [{part.state}] {JSON.stringify(part.input ?? {})}
      </code>
      {part.state === "output-available" && <div data-testid="tool-output">{JSON.stringify(part.output)}</div>}
      {part.state === "output-error" && <div data-testid="tool-error">{part.errorText}</div>}
      {part.state === "input-available" && name === FRONTEND_TOOL && (
        <button
          data-testid="answer-tool"
          onClick={() => addToolOutput({ tool: name, toolCallId: part.toolCallId, output: answer })}
        >
          Answer {answer}
        </button>
      )}
      {part.state === "approval-requested" && (
        <>
          <button
            data-testid="approve"
            onClick={() => chat.addToolApprovalResponse({ id: part.approval.id, approved: true })}
          >
            Approve
          </button>
          <button
            data-testid="deny"
            onClick={() => chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not now" })}
          >
            Deny
          </button>
        </>
      )}
    </div>
  );
}

// chatgate's `finish.messageMetadata` (docs/protocols.md): {usage: {inputTokens, outputTokens, ...}, model,
// provider, costUsd?}; useChat keeps it as `message.metadata`. Absent when the provider reported nothing.
function Usage({ metadata }) {
  const usage = metadata?.usage;
  if (!usage) return null;
  const extras = [
    usage.reasoningTokens !== undefined && `${usage.reasoningTokens} reasoning`,
    usage.cachedInputTokens !== undefined && `${usage.cachedInputTokens} cached`,
    metadata.costUsd !== undefined && `$${metadata.costUsd}`,
  ].filter(Boolean);
  return (
    <small data-testid="usage">
      {[`in ${usage.inputTokens}`, `out ${usage.outputTokens} tokens`, ...extras, metadata.model].join(" · ")}
    </small>
  );
}

// Feedback (docs/prompts.md#feedback): a thumb up or down on an answer, by its run id (chatgate's
// `messageMetadata.runId`) or, on a stored thread, by the answer's id; the pressed thumb again withdraws it.
function Thumbs({ message }) {
  const [given, setGiven] = useState(null);
  const [failed, setFailed] = useState(null);
  const path = thread
    ? `${agentUrl}/threads/${encodeURIComponent(thread)}/messages/${encodeURIComponent(message.id)}/feedback`
    : `${agentUrl}/runs/${encodeURIComponent(message.metadata?.runId ?? message.id)}/feedback`;
  const give = async (score) => {
    const withdraw = given === score;
    const init = withdraw
      ? { method: "DELETE", headers: await headers() }
      : {
          method: "POST",
          headers: { ...(await headers()), "content-type": "application/json" },
          body: JSON.stringify({ score }),
        };
    const response = await fetch(path, init);
    if (!response.ok) {
      setFailed(`${response.status} ${await response.text()}`);
      return;
    }
    setFailed(null);
    setGiven(withdraw ? null : score);
  };
  return (
    <span data-testid="feedback">
      <button data-testid="thumb-up" aria-pressed={given === 1} onClick={() => give(1)}>
        Good
      </button>
      <button data-testid="thumb-down" aria-pressed={given === -1} onClick={() => give(-1)}>
        Bad
      </button>
      {failed && <small data-testid="feedback-error">{failed}</small>}
    </span>
  );
}

function App({ initialMessages }) {
  const chat = useChat({
    ...(thread ? { id: thread, resume: true } : {}),
    messages: initialMessages,
    transport,
    sendAutomaticallyWhen: resendWhen,
  });
  const [input, setInput] = useState("");
  const busy = chat.status === "submitted" || chat.status === "streaming";
  const send = (event) => {
    event.preventDefault();
    if (!input.trim()) return;
    chat.sendMessage({ text: input });
    setInput("");
  };
  return (
    <>
      <ol data-testid="messages">
        {chat.messages.map((message) => (
          <li key={message.id} data-testid="message" data-role={message.role} data-id={message.id}>
            <b>{message.role}</b>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} chat={chat} />
            ))}
            {message.role === "assistant" && <Usage metadata={message.metadata} />}
            {message.role === "assistant" && !busy && <Thumbs message={message} />}
          </li>
        ))}
      </ol>
      <p>
        status: <span data-testid="status">{chat.status}</span>
      </p>
      {chat.error && <p data-testid="error" role="alert">{chat.error.message}</p>}
      <form onSubmit={send}>
        <label>
          Message <input data-testid="input" value={input} onChange={(event) => setInput(event.target.value)} />
        </label>
        <button data-testid="send" type="submit" disabled={busy}>
          Send
        </button>
        <button data-testid="regenerate" type="button" disabled={busy} onClick={() => chat.regenerate()}>
          Regenerate
        </button>
        <button data-testid="stop" type="button" disabled={!busy} onClick={() => chat.stop()}>
          Stop
        </button>
      </form>
    </>
  );
}

function Root() {
  const [loaded, setLoaded] = useState(thread || signInSettings ? null : []);
  const [loadError, setLoadError] = useState(null);
  const [user, setUser] = useState(null);
  useEffect(() => {
    const signedIn = signInSettings
      ? signIn(signInSettings, returned).then((token) => setUser(subjectOf(token)))
      : Promise.resolve();
    signedIn
      .then(() => (thread ? loadThread() : []))
      .then(setLoaded, (error) => setLoadError(String(error?.message ?? error)));
  }, []);
  return (
    <main>
      <h1>
        useChat on ai <span data-testid="ai-major">{__AI_MAJOR__}</span>
        {thread && <small> thread <span data-testid="thread">{thread}</span></small>}
        {user && <small> signed in as <span data-testid="user">{user}</span></small>}
      </h1>
      {loadError && <p data-testid="error" role="alert">{loadError}</p>}
      {loaded === null && !loadError && <p data-testid="loading">{thread ? "Loading the thread…" : "Signing in…"}</p>}
      {loaded !== null && <App initialMessages={loaded} />}
    </main>
  );
}

createRoot(document.getElementById("root")).render(<Root />);
