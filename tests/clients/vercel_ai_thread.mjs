// Drives useChat on a server-held thread with the `ai` package's own chat class: each request sends
// only the newest message (prepareSendMessagesRequest, as the AI SDK docs recommend for stored chats),
// and a reload starts a new chat from the server's GET .../messages after useChat's own validation.
//
// stdin:  {"url": chat endpoint, "version": 5 | 6 | 7, "chatId": "...",
//          "messagesUrl"?: GET URL of the stored messages: loaded (and validated) as the chat's start,
//          "steps": [{"sendMessage": {"text": "..."}} | {"regenerate": true} | {"resume": true}]}
// A resume step is useChat's `resume: true` on page load: chat.resumeStream() (GET {url}/{chatId}/stream).
// stdout: {"messages": [UIMessage...], "requests": [{"body": {...}, "chunks": [...]}], "loaded"?: [...]}
// Exits non-zero on a chat error, a chunk the schema rejects, or stored messages validateUIMessages rejects.

import { readFileSync } from "node:fs";

const input = JSON.parse(readFileSync(0, "utf8"));
const { url, version, steps } = input;
const ai = await import(`ai${version}`);

function fail(message) {
  process.stderr.write(`vercel_ai_thread (ai v${version}): ${message}\n`);
  process.exit(1);
}

class MemoryChatState {
  status = "ready";
  error = undefined;
  messages = [];
  constructor(messages) {
    this.messages = messages;
  }
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.with(index, message);
  };
  snapshot = (thing) => structuredClone(thing);
}

class MemoryChat extends ai.AbstractChat {
  constructor(init) {
    super({ ...init, state: new MemoryChatState(init.messages ?? []) });
  }
}

const requests = [];
const pending = new Set();
async function recordingFetch(resource, init) {
  const exchange = { body: init?.body ? JSON.parse(init.body) : null, chunks: [], status: 0 };
  requests.push(exchange);
  const response = await fetch(resource, init);
  exchange.status = response.status;
  if (response.ok && response.body) {
    const reading = (async () => {
      const stream = ai.parseJsonEventStream({ stream: response.clone().body, schema: ai.uiMessageChunkSchema });
      for await (const result of stream) {
        if (!result.success) fail(`chunk rejected by uiMessageChunkSchema: ${result.error}`);
        exchange.chunks.push(result.value);
      }
    })();
    pending.add(reading);
    reading.finally(() => pending.delete(reading));
  }
  return response;
}

let loaded;
if (input.messagesUrl) {
  const response = await fetch(input.messagesUrl);
  if (!response.ok) fail(`GET messages answered ${response.status}`);
  const body = await response.json();
  try {
    loaded = await ai.validateUIMessages({ messages: body.messages });
  } catch (error) {
    fail(`validateUIMessages rejected the stored messages: ${error?.message ?? error}\n${JSON.stringify(body)}`);
  }
}

const errors = [];
const chat = new MemoryChat({
  id: input.chatId,
  messages: loaded ?? [],
  transport: new ai.DefaultChatTransport({
    api: url,
    fetch: recordingFetch,
    prepareSendMessagesRequest: ({ id, messages, trigger, messageId }) => ({
      body: { id, message: messages.at(-1), trigger, messageId },
    }),
  }),
  onError: (error) => errors.push(String(error?.message ?? error)),
});

async function settle() {
  const deadline = Date.now() + 30_000;
  let idleTicks = 0;
  while (idleTicks < 3) {
    if (Date.now() > deadline) fail(`the chat did not settle (status ${chat.status})`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const busy = chat.status === "submitted" || chat.status === "streaming" || pending.size > 0;
    idleTicks = busy ? 0 : idleTicks + 1;
  }
}

for (const step of steps) {
  if (step.sendMessage) {
    await chat.sendMessage({ text: step.sendMessage.text });
  } else if (step.regenerate) {
    await chat.regenerate();
  } else if (step.resume) {
    await chat.resumeStream();
  } else {
    fail(`unknown step ${JSON.stringify(step)}`);
  }
  await settle();
  if (errors.length > 0 || chat.status === "error") {
    fail(`the chat failed: ${errors.join("; ") || chat.error}\n${JSON.stringify(chat.messages)}`);
  }
}

process.stdout.write(JSON.stringify({ messages: chat.messages, requests, ...(loaded ? { loaded } : {}) }));
