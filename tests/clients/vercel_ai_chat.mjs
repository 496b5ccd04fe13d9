// Drives a multi-request useChat conversation with the `ai` package's own chat machinery: an
// AbstractChat over a small in-memory state and DefaultChatTransport, resending on its own through
// the package's sendAutomaticallyWhen helper, as a real app does after addToolOutput or an approval.
//
// stdin:  {"url": "...", "version": 5 | 6 | 7, "chatId"?: "...", "headers"?: {...}, "expectError"?: true,
//          "sendAutomaticallyWhen"?: "lastAssistantMessageIsCompleteWithToolCalls" (default)
//                                  | "lastAssistantMessageIsCompleteWithApprovalResponses",
//          "steps": [{"sendMessage": {"text": "..."}},
//                    {"addToolOutput": {"tool": "NAME", "output": any} or {"tool": "NAME", "errorText": "..."}},
//                    {"addToolApprovalResponse": {"approved": true | false, "reason"?: "..."}}]}
//          addToolOutput answers the newest input-available call of that tool; addToolApprovalResponse
//          the newest approval-requested part.
// stdout: {"messages": [UIMessage...], "requests": [{"body": {...}, "chunks": [...]}]}
//          `messages` is the chat's final state; `requests` is every POST the transport made, in order,
//          with the chunks of its response as this version's parseJsonEventStream read them, its
//          status and response headers. `headers` go on every request (DefaultChatTransport's `headers`).
//          With `expectError`, a chat error is reported in "errors" (and the steps stop) instead of failing.
// Exits non-zero on a chat error (onError, status "error"), a chunk the schema rejects, a step whose
// target part does not exist, or a conversation that does not settle.

import { readFileSync } from "node:fs";

const input = JSON.parse(readFileSync(0, "utf8"));
const { url, version, steps, headers, expectError } = input;
const ai = await import(`ai${version}`);

function fail(message) {
  process.stderr.write(`vercel_ai_chat (ai v${version}): ${message}\n`);
  process.exit(1);
}

class MemoryChatState {
  status = "ready";
  error = undefined;
  messages = [];
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
    super({ ...init, state: new MemoryChatState() });
  }
}

// Every POST the transport makes, and its response read through the package's own chunk parser.
const requests = [];
const pending = new Set();
async function recordingFetch(resource, init) {
  const exchange = { body: JSON.parse(init.body), chunks: [] };
  requests.push(exchange);
  const response = await fetch(resource, init);
  exchange.status = response.status;
  exchange.headers = Object.fromEntries(response.headers);
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

const helperName = input.sendAutomaticallyWhen ?? "lastAssistantMessageIsCompleteWithToolCalls";
const sendAutomaticallyWhen = ai[helperName];
if (typeof sendAutomaticallyWhen !== "function") fail(`ai v${version} has no ${helperName}`);

const errors = [];
const chat = new MemoryChat({
  id: input.chatId ?? "chat-1",
  transport: new ai.DefaultChatTransport({ api: url, fetch: recordingFetch, headers: headers ?? {} }),
  sendAutomaticallyWhen,
  onError: (error) => errors.push(String(error?.message ?? error)),
});

// addToolOutput and addToolApprovalResponse start their resend without awaiting it: wait until the
// chat has been idle, with every response read, for a few timer ticks in a row.
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

function newestToolPart(predicate) {
  for (const message of [...chat.messages].reverse()) {
    for (const part of [...message.parts].reverse()) {
      if ((part.type.startsWith("tool-") || part.type === "dynamic-tool") && predicate(part)) return part;
    }
  }
  return undefined;
}

function toolName(part) {
  return part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
}

for (const step of steps) {
  if (step.sendMessage) {
    await chat.sendMessage({ text: step.sendMessage.text });
  } else if (step.addToolOutput) {
    const { tool, output, errorText } = step.addToolOutput;
    const part = newestToolPart((p) => toolName(p) === tool && p.state === "input-available");
    if (!part) fail(`no input-available call of ${tool} to answer`);
    const answer = errorText === undefined ? { output } : { state: "output-error", errorText };
    await chat.addToolOutput({ tool, toolCallId: part.toolCallId, ...answer });
  } else if (step.addToolApprovalResponse) {
    const { approved, reason } = step.addToolApprovalResponse;
    const part = newestToolPart((p) => p.state === "approval-requested");
    if (!part) fail("no approval-requested tool part to answer");
    await chat.addToolApprovalResponse({ id: part.approval.id, approved, reason });
  } else {
    fail(`unknown step ${JSON.stringify(step)}`);
  }
  await settle();
  if (expectError && (errors.length > 0 || chat.status === "error")) break;
  if (errors.length > 0 || chat.status === "error") {
    fail(`the chat failed: ${errors.join("; ") || chat.error}\n${JSON.stringify(chat.messages)}`);
  }
}

process.stdout.write(JSON.stringify({ messages: chat.messages, requests, errors }));
