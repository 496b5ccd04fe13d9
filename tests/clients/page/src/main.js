// chatgate's chat page: a real useChat client. The `ai` package's own AbstractChat and
// DefaultChatTransport do the protocol; this file only keeps the chat's state observable and draws it.
// Everything the model or the server sends is put in the page as text (see markdown.js), never as HTML.

import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";
import { renderMarkdown } from "./markdown.js";
import { accessToken, finishSignIn, loadSignIn, signOut, tokenRefused } from "./sign_in.js";

const KEY_STORAGE = "chatgate.key";
const $ = (id) => document.getElementById(id);

// ---- the chat: AbstractChat over a state that tells the page when to redraw -------------------------

// The chat mutates the streaming message in place; a copy per change lets the page see what changed.
class PageChatState {
  #status = "ready";
  #error = undefined;
  constructor(messages, changed) {
    this.messages = messages;
    this.changed = changed;
  }
  get status() {
    return this.#status;
  }
  set status(value) {
    this.#status = value;
    this.changed();
  }
  get error() {
    return this.#error;
  }
  set error(value) {
    this.#error = value;
    this.changed();
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, structuredClone(message)];
    this.changed();
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
    this.changed();
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.with(index, structuredClone(message));
    this.changed();
  };
  snapshot = (value) => structuredClone(value);
}

class PageChat extends AbstractChat {
  constructor({ messages = [], changed, ...init }) {
    super({ ...init, state: new PageChatState(messages, changed) });
  }
}

// ---- page state ------------------------------------------------------------------------------------

const page = {
  agents: [],
  agent: null, // the chosen entry of GET /agents
  serverThreads: false, // the agent keeps conversations on the server (GET .../threads answers)
  chat: null,
  key: sessionStorage.getItem(KEY_STORAGE),
  signIn: false, // the server signs people in ([auth.jwt] page_client_id): a token instead of a key
  fetchError: null,
};

async function authHeaders() {
  if (page.signIn) return { Authorization: `Bearer ${await accessToken()}` };
  return page.key ? { Authorization: `Bearer ${page.key}` } : {};
}

/**
 * A fetch to this server with the key or token. A 401 asks the user for a key and tries again with it;
 * a refused token is refreshed (or the person signs in again) and tried once more. Paths are relative
 * (`agents`, not `/agents`): they resolve against the page's address, so the page works wherever
 * chatgate is mounted (`/llm/`).
 */
async function api(path, init = {}) {
  for (let tries = 1; ; tries += 1) {
    const response = await fetch(path, { ...init, headers: { ...init.headers, ...(await authHeaders()) } });
    if (response.status !== 401) return response;
    if (page.signIn) {
      if (tries > 1) return response; // a fresh token refused too: show why
      tokenRefused();
      continue;
    }
    await askForKey(page.key ? "That key was refused. Enter another." : "This server asks for an API key.");
  }
}

function errorMessage(raw) {
  try {
    const parsed = JSON.parse(raw);
    if (parsed?.error?.message) return parsed.error.message;
  } catch {
    // not JSON: show it as it is
  }
  return raw || "Something went wrong.";
}

async function readError(response) {
  return errorMessage(await response.text());
}

// ---- the API key -----------------------------------------------------------------------------------

function askForKey(reason) {
  const dialog = $("key-dialog");
  $("key-reason").textContent = `${reason} It is kept in this tab's session storage only.`;
  $("key").value = "";
  return new Promise((resolve) => {
    const form = $("key-form");
    const submitted = (event) => {
      event.preventDefault();
      const key = $("key").value.trim();
      if (!key) return;
      form.removeEventListener("submit", submitted);
      page.key = key;
      sessionStorage.setItem(KEY_STORAGE, key);
      $("forget-key").hidden = false;
      dialog.close();
      resolve();
    };
    form.addEventListener("submit", submitted);
    if (!dialog.open) dialog.showModal();
    $("key").focus();
  });
}

// ---- where we are: #agent=NAME&thread=ID -----------------------------------------------------------

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { agent: params.get("agent"), thread: params.get("thread") };
}

function writeHash() {
  const params = new URLSearchParams();
  if (page.agent) params.set("agent", page.agent.name);
  if (page.serverThreads && page.chat && page.chat.messages.length > 0) params.set("thread", page.chat.id);
  const hash = `#${params}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// ---- agents ----------------------------------------------------------------------------------------

async function loadAgents() {
  const response = await api("agents");
  if (!response.ok) {
    showPageError(`Could not list the agents: ${await readError(response)}`);
    setStatus("error");
    return;
  }
  page.agents = (await response.json()).agents;
  const select = $("agent");
  select.replaceChildren(
    ...page.agents.map((agent) => {
      const option = document.createElement("option");
      option.value = agent.name;
      option.textContent = agent.name;
      return option;
    }),
  );
  select.disabled = page.agents.length === 0;
  if (page.agents.length === 0) {
    showPageError("This key may use no agent.");
    return;
  }
  const wanted = readHash();
  const agent =
    page.agents.find((a) => a.name === wanted.agent) ?? page.agents.find((a) => a.default) ?? page.agents[0];
  await chooseAgent(agent.name, wanted.agent === agent.name ? wanted.thread : null);
}

async function chooseAgent(name, threadId = null) {
  const agent = page.agents.find((a) => a.name === name);
  page.agent = agent;
  $("agent").value = agent.name;
  const clientOwned = agent.manage_system_prompt === "client";
  $("policy").textContent = clientOwned
    ? `${agent.model} · system prompt: written by you (client policy)`
    : `${agent.model} · system prompt: set by the server (server policy)`;
  $("policy").dataset.policy = agent.manage_system_prompt;
  $("description").textContent = agent.description || "";
  $("system-field").hidden = !clientOwned;
  const threads = await api(`agents/${encodeURIComponent(agent.name)}/threads`);
  page.serverThreads = threads.ok;
  $("threads").hidden = !threads.ok;
  if (threads.ok) drawThreads((await threads.json()).threads);
  if (threadId && page.serverThreads) await openThread(threadId, { resume: true });
  else startChat();
}

// ---- server-held threads ---------------------------------------------------------------------------

function threadPath(id, tail = "") {
  return `agents/${encodeURIComponent(page.agent.name)}/threads/${encodeURIComponent(id)}${tail}`;
}

async function refreshThreads() {
  if (!page.serverThreads) return;
  // A side read: a failed one (the network, a server going away) leaves the list as it was.
  const response = await api(`agents/${encodeURIComponent(page.agent.name)}/threads`).catch(() => null);
  if (response?.ok) drawThreads((await response.json()).threads);
}

// A thread's title is written just after its first answer (docs/conversations.md#titles): read the list
// again a little later, twice, so the new title replaces the first question without a reload.
const TITLE_READS_MS = [1500, 5000];

function awaitTitle() {
  for (const delay of TITLE_READS_MS) setTimeout(refreshThreads, delay);
}

function drawThreads(threads) {
  const current = page.chat?.id;
  $("thread-list").replaceChildren(
    ...threads.map((thread) => {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = thread.title || "(untitled)";
      button.dataset.threadId = thread.id;
      button.dataset.testid = "thread";
      if (thread.id === current) button.setAttribute("aria-current", "true");
      button.addEventListener("click", () => openThread(thread.id, { resume: true }));
      const item = document.createElement("li");
      item.append(button);
      return item;
    }),
  );
  $("thread-admin").hidden = !(page.serverThreads && threads.some((t) => t.id === current));
}

async function openThread(id, { resume }) {
  const response = await api(threadPath(id, "/messages"));
  if (!response.ok) {
    // A new chat in its place, then the reason: starting a chat clears the alert, so it comes after.
    const reason = await couldNotOpen(response);
    startChat();
    showPageError(reason);
    $("input").focus();
    return;
  }
  startChat({ id, messages: (await response.json()).messages });
  await refreshThreads();
  // A running answer streams in live from where it began (the server replays its run), or a 204.
  if (resume) await page.chat.resumeStream();
  await describeThread(id);
}

/**
 * Why a conversation could not be opened, and what the page did instead. The server answers 404 alike
 * for a thread that does not exist and for another key's or user's, so as not to say which it is.
 */
async function couldNotOpen(response) {
  const instead = "A new chat is open below.";
  if (response.status === 404) {
    return `That conversation was not found: it does not exist, or it belongs to another key or user. ${instead}`;
  }
  return `Could not open that conversation: ${await readError(response)} ${instead}`;
}

const SYSTEM_KINDS = {
  agent: () => "the agent's own prompt",
  prompt: (system) => `the named prompt "${system.prompt}"`,
  text: () => "free text",
};

/**
 * Show which system message the thread uses. A run the page could not resume (a 204 while the thread
 * still runs: started through AG-UI, or too long to replay) is waited for, and the thread reloaded.
 */
async function describeThread(id) {
  const response = await api(threadPath(id)).catch(() => null); // a side read, like the list's
  if (!response?.ok || page.chat?.id !== id) return;
  const thread = await response.json();
  const kind = SYSTEM_KINDS[thread.system?.kind];
  $("thread-system").textContent = kind ? `Now: ${kind(thread.system)}.` : "";
  if (thread.running && page.chat.status === "ready") {
    $("running").hidden = false;
    setTimeout(() => waitForRun(id), 1000);
  }
}

/**
 * Each second, ask whether the thread's run has ended; once it has, reload the thread. One read per
 * poll decides (a second read could find the run ended and stop waiting without reloading). A poll
 * the network or the server failed is tried again; a refusal (the thread is gone) ends the wait.
 */
async function waitForRun(id) {
  if (page.chat?.id !== id || page.chat.status !== "ready") return;
  const again = await api(threadPath(id)).catch(() => null);
  if (again?.ok && !(await again.json()).running) await openThread(id, { resume: false });
  else if (!again || again.ok || again.status >= 500) setTimeout(() => waitForRun(id), 1000);
}

async function changeSystem(tail, method, body) {
  const id = page.chat.id;
  const response = await api(threadPath(id, tail), {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    showPageError(await readError(response));
    return;
  }
  await openThread(id, { resume: false });
  $("swap-text").value = "";
  $("swap-prompt").value = "";
  $("admin-done").textContent = tail === "/reset" ? "The conversation was reset." : "The system message was swapped.";
}

// ---- the chat --------------------------------------------------------------------------------------

function withSystemMessage(messages) {
  const text = $("system").value.trim();
  if (page.agent.manage_system_prompt !== "client" || !text) return messages;
  return [{ id: "system", role: "system", parts: [{ type: "text", text }] }, ...messages];
}

function startChat({ id, messages } = {}) {
  if (page.chat && page.chat.status !== "ready" && page.chat.status !== "error") page.chat.stop();
  const agent = page.agent;
  page.chat = new PageChat({
    ...(id ? { id } : {}),
    messages: messages ?? [],
    changed: scheduleDraw,
    transport: new DefaultChatTransport({
      api: `agents/${encodeURIComponent(agent.name)}/chat`,
      headers: authHeaders,
      prepareSendMessagesRequest: ({ id: chatId, messages: all, body, trigger, messageId }) => ({
        body: { ...body, id: chatId, messages: withSystemMessage(all), trigger, messageId },
      }),
    }),
    sendAutomaticallyWhen: (options) =>
      lastAssistantMessageIsCompleteWithToolCalls(options) ||
      lastAssistantMessageIsCompleteWithApprovalResponses(options),
    onFinish: ({ messages: all }) => {
      writeHash();
      refreshThreads();
      if (all.filter((m) => m.role === "assistant").length === 1) awaitTitle();
    },
    onError: () => {}, // shown from chat.error when drawn
  });
  drawn.clear();
  $("messages").replaceChildren();
  $("running").hidden = true;
  $("thread-system").textContent = "";
  showPageError(null);
  $("admin-done").textContent = "";
  writeHash();
  scheduleDraw();
}

// ---- drawing ---------------------------------------------------------------------------------------

let drawPending = false;
const drawn = new Map(); // message id -> { message, element }: unchanged messages are not redrawn

function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  setTimeout(() => {
    drawPending = false;
    draw();
  }, 16);
}

function setStatus(status) {
  $("status").textContent = status;
}

function showPageError(text) {
  page.fetchError = text;
  drawError();
}

function drawError() {
  const chatError = page.chat?.error ? errorMessage(page.chat.error.message) : null;
  const text = chatError ?? page.fetchError;
  $("error").hidden = !text;
  $("error").textContent = text ?? "";
}

function draw() {
  const chat = page.chat;
  if (!chat) return;
  const busy = chat.status === "submitted" || chat.status === "streaming";
  setStatus(chat.status);
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  $("regenerate").disabled = busy || !chat.messages.some((m) => m.role === "user");
  drawError();
  if (page.serverThreads) writeHash(); // the thread is in the URL from its first message, for a reload

  const box = $("messages");
  const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  const seen = new Set();
  let previous = null;
  for (const message of chat.messages) {
    seen.add(message.id);
    let entry = drawn.get(message.id);
    if (!entry || entry.message !== message || entry.busy !== busy) {
      const element = messageElement(message, busy);
      if (entry) entry.element.replaceWith(element);
      entry = { message, element, busy };
      drawn.set(message.id, entry);
    }
    const expectedPlace = previous ? previous.nextSibling : box.firstChild;
    if (expectedPlace !== entry.element) box.insertBefore(entry.element, expectedPlace);
    previous = entry.element;
  }
  for (const [id, entry] of drawn) {
    if (!seen.has(id)) {
      entry.element.remove();
      drawn.delete(id);
    }
  }
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function h(tag, attributes = {}, children = []) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  node.append(...children);
  return node;
}

function messageElement(message, busy) {
  const who = message.role === "user" ? "You" : message.role === "assistant" ? "Assistant" : message.role;
  const element = h("article", { class: "message", "data-testid": "message", "data-role": message.role }, [
    h("p", { class: "who" }, [who]),
  ]);
  for (const part of message.parts) {
    const drawnPart = partElement(part, message, busy);
    if (drawnPart) element.append(drawnPart);
  }
  const status = message.metadata?.chatgate?.status;
  if (status === "partial" || status === "error") {
    element.append(h("p", { class: "who", "data-testid": "message-status" }, [`(${status})`]));
  }
  const usage = message.role === "assistant" ? usageLine(message.metadata) : null;
  if (usage) element.append(h("p", { class: "usage", "data-testid": "usage" }, [usage]));
  if (message.role === "assistant" && !(busy && message === page.chat?.lastMessage)) {
    element.append(feedbackActions(message));
  }
  return element;
}

// ---- feedback: a thumb up or down on each answer (docs/prompts.md#feedback) ------------------------

const THUMBS = [
  { score: 1, testid: "thumb-up", label: "Good answer", glyph: "\u{1F44D}" },
  { score: -1, testid: "thumb-down", label: "Bad answer", glyph: "\u{1F44E}" },
];
const given = new Map(); // message id -> the score this person gave it in this page, or absent

// A stored thread's answer is named by the thread and its id; a stateless one by its run's id, which
// chatgate sends in the answer's metadata.
function feedbackPath(message) {
  const tail = "/feedback";
  if (page.serverThreads) return threadPath(page.chat.id, `/messages/${encodeURIComponent(message.id)}${tail}`);
  const run = message.metadata?.runId ?? message.id;
  return `agents/${encodeURIComponent(page.agent.name)}/runs/${encodeURIComponent(run)}${tail}`;
}

function feedbackActions(message) {
  const box = h("div", { class: "feedback", "data-testid": "feedback" });
  const buttons = THUMBS.map(({ score, testid, label, glyph }) => {
    const pressed = given.get(message.id) === score;
    const button = h("button", { type: "button", class: "thumb", "data-testid": testid, "aria-label": label }, [glyph]);
    button.setAttribute("aria-pressed", String(pressed));
    button.addEventListener("click", () => giveFeedback(message, score, buttons));
    return button;
  });
  box.append(...buttons);
  return box;
}

/** Give ``score`` to ``message``; the thumb already pressed withdraws it. The buttons show the outcome. */
async function giveFeedback(message, score, buttons) {
  const withdraw = given.get(message.id) === score;
  const init = withdraw
    ? { method: "DELETE" }
    : { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ score }) };
  const response = await api(feedbackPath(message), init).catch(() => null);
  if (!response?.ok) {
    showPageError(response ? `Your feedback was not saved: ${await readError(response)}` : "Your feedback was not saved.");
    return;
  }
  if (withdraw) given.delete(message.id);
  else given.set(message.id, score);
  buttons.forEach((button, index) => button.setAttribute("aria-pressed", String(given.get(message.id) === THUMBS[index].score)));
}

// What the turn used, from chatgate's `finish.messageMetadata` ({usage, model, provider, costUsd?},
// docs/protocols.md), which useChat keeps as `message.metadata`; null when the provider reported nothing.
function usageLine(metadata) {
  const usage = metadata?.usage;
  if (!usage) return null;
  const extras = [
    usage.reasoningTokens !== undefined && `${usage.reasoningTokens} reasoning`,
    usage.cachedInputTokens !== undefined && `${usage.cachedInputTokens} cached`,
    metadata.costUsd !== undefined && `$${metadata.costUsd}`,
  ].filter(Boolean);
  return [`in ${usage.inputTokens}`, `out ${usage.outputTokens} tokens`, ...extras, metadata.model].join(" · ");
}

function partElement(part, message, busy) {
  if (part.type === "text") {
    if (message.role === "assistant") {
      const body = h("div", { class: "text", "data-testid": "part-text" });
      body.append(renderMarkdown(part.text));
      return body;
    }
    return h("p", { class: "text user-text", "data-testid": "part-text" }, [part.text]);
  }
  if (part.type === "reasoning") {
    return h("details", { class: "reasoning", open: "", "data-testid": "part-reasoning" }, [
      h("summary", {}, ["Reasoning"]),
      h("p", { "data-testid": "reasoning-text" }, [part.text]),
    ]);
  }
  if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) return toolElement(part, busy);
  return null; // step boundaries, sources, data parts: nothing to show
}

const STATE_LABELS = {
  "input-streaming": "preparing the call",
  "input-available": "called",
  "approval-requested": "waiting for your approval",
  "approval-responded": "answered",
  "output-available": "done",
  "output-error": "failed",
  "output-denied": "denied",
};

function toolElement(part, busy) {
  const name = part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
  const element = h("div", {
    class: "tool",
    "data-testid": "part-tool",
    "data-tool-name": name,
    "data-state": part.state,
  });
  element.append(h("p", { class: "tool-head" }, [`Tool ${name}: ${STATE_LABELS[part.state] ?? part.state}`]));
  if (part.input !== undefined) {
    element.append(h("p", { class: "tool-label" }, ["Input"]));
    element.append(h("pre", { "data-testid": "tool-input", "aria-label": `${name} input` }, [pretty(part.input)]));
  }
  if (part.state === "output-available") {
    element.append(h("p", { class: "tool-label" }, ["Result"]));
    element.append(h("pre", { "data-testid": "tool-output", "aria-label": `${name} output` }, [pretty(part.output)]));
  } else if (part.state === "output-error") {
    element.append(h("pre", { "data-testid": "tool-error", class: "deny" }, [String(part.errorText ?? "")]));
  } else if (part.state === "output-denied") {
    element.append(h("p", { class: "deny" }, ["You denied this call."]));
  }
  if (part.state === "approval-requested" && !busy) element.append(approvalActions(part, name));
  if (part.state === "input-available" && !busy) element.append(answerActions(part, name));
  return element;
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function approvalActions(part, name) {
  const answer = (approved) => () => page.chat.addToolApprovalResponse({ id: part.approval.id, approved });
  const approve = h("button", { type: "button", class: "primary", "data-testid": "approve" }, [`Approve ${name}`]);
  const deny = h("button", { type: "button", "data-testid": "deny" }, [`Deny ${name}`]);
  approve.addEventListener("click", answer(true));
  deny.addEventListener("click", answer(false));
  return h("div", { class: "tool-actions" }, [approve, deny]);
}

function answerActions(part, name) {
  const fieldId = `answer-${part.toolCallId}`;
  const field = h("textarea", { id: fieldId, rows: "1", "data-testid": "tool-answer" });
  const label = h("label", { for: fieldId }, [`Your answer for ${name} (JSON or text)`]);
  const send = h("button", { type: "button", class: "primary", "data-testid": "answer-tool" }, ["Send answer"]);
  const fail = h("button", { type: "button", "data-testid": "fail-tool" }, ["Send as error"]);
  const toolCallId = part.toolCallId;
  send.addEventListener("click", () => {
    let output = field.value;
    try {
      output = JSON.parse(field.value);
    } catch {
      // plain text is an answer too
    }
    page.chat.addToolOutput({ tool: name, toolCallId, output });
  });
  fail.addEventListener("click", () =>
    page.chat.addToolOutput({ tool: name, toolCallId, state: "output-error", errorText: field.value || "failed" }),
  );
  return h("div", { class: "tool-actions" }, [h("div", {}, [label, field]), send, fail]);
}

// ---- wiring ----------------------------------------------------------------------------------------

function wire() {
  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const chat = page.chat;
    const text = $("input").value;
    if (!chat || !text.trim() || chat.status === "submitted" || chat.status === "streaming") return;
    $("input").value = "";
    showPageError(null);
    chat.sendMessage({ text });
  });
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", async () => {
    const chat = page.chat;
    if (!chat) return;
    if (!page.serverThreads) {
      await chat.stop(); // the stream is the model call: aborting it ends the call
      return;
    }
    // A server-held run outlives our connection: stop it on the server, so it ends (and is saved) where
    // it is and our stream gets its normal ending; then abort, in case the stop came too early.
    const response = await api(threadPath(chat.id, "/stop"), { method: "POST" }).catch(() => null);
    const stopped = response?.ok ? (await response.json()).stopped : false;
    await chat.stop();
    if (!stopped && page.chat === chat) await describeThread(chat.id);
  });
  $("regenerate").addEventListener("click", () => {
    showPageError(null);
    page.chat?.regenerate();
  });
  $("new-chat").addEventListener("click", () => {
    startChat();
    refreshThreads();
    $("input").focus();
  });
  $("agent").addEventListener("change", (event) => chooseAgent(event.target.value));
  $("key-dialog").addEventListener("cancel", (event) => event.preventDefault()); // a key is needed to go on
  $("forget-key").hidden = !page.key;
  $("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORAGE);
    signOut();
    page.key = null;
    history.replaceState(null, "", location.pathname); // the conversation was the old key's
    location.reload();
  });
  $("swap").addEventListener("click", () => {
    const text = $("swap-text").value.trim();
    const prompt = $("swap-prompt").value.trim();
    const body = prompt ? { prompt } : { system_message: text || null };
    changeSystem("/system-message", "PUT", body);
  });
  $("reset").addEventListener("click", () => changeSystem("/reset", "POST", {}));
}

async function start() {
  page.signIn = await loadSignIn();
  if (page.signIn) {
    await finishSignIn();
    await accessToken(); // signed in, or on the way to the provider's sign-in
    $("forget-key").textContent = "Sign out";
    $("forget-key").hidden = false;
  }
  await loadAgents();
}

wire();
start().catch((error) => showPageError(String(error?.message ?? error)));
