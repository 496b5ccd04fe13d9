// Drives chatgate's useChat endpoint the way the real AI SDK client does, with the chosen `ai` version.
//
// stdin:  {"url": "...", "version": 5 | 6 | 7, "body": {...DefaultChatTransport body}, "headers"?: {...}}
// stdout: {"headers": {...}, "chunks": [...], "message": UIMessage}
// Exits non-zero when a header is missing, a frame is not LF-only, a chunk fails the version's
// uiMessageChunkSchema, readUIMessageStream rejects a chunk, or the stream lacks finish / [DONE].

import { readFileSync } from "node:fs";

const { url, version, body, headers: requestHeaders } = JSON.parse(readFileSync(0, "utf8"));
const ai = await import(`ai${version}`);

function fail(message) {
  process.stderr.write(`vercel_ai_run (ai v${version}): ${message}\n`);
  process.exit(1);
}

const response = await fetch(url, {
  method: "POST",
  headers: { "content-type": "application/json", ...(requestHeaders ?? {}) },
  body: JSON.stringify(body),
});
if (response.status !== 200) fail(`status ${response.status}: ${await response.text()}`);

const expected = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
};
const headers = {};
for (const [name, value] of Object.entries(expected)) {
  const actual = response.headers.get(name);
  if (actual === null || !actual.startsWith(value)) fail(`header ${name} is ${actual}, expected ${value}`);
  headers[name] = actual;
}

const text = await response.text();
if (text.includes("\r")) fail("the stream contains CR: frames must be LF-only");
if (!text.endsWith("data: [DONE]\n\n")) fail(`the stream does not end with [DONE]: ${JSON.stringify(text.slice(-200))}`);

const bytes = () =>
  new ReadableStream({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      controller.close();
    },
  });

// Every chunk must pass this version's schema.
const chunks = [];
const parsed = ai.parseJsonEventStream({ stream: bytes(), schema: ai.uiMessageChunkSchema });
for await (const result of parsed) {
  if (!result.success) fail(`chunk rejected by uiMessageChunkSchema: ${result.error}\n${JSON.stringify(result.rawValue)}`);
  chunks.push(result.value);
}
if (chunks.length === 0 || chunks[0].type !== "start") fail("the first chunk is not start");
if (chunks.at(-1).type !== "finish") fail(`the last chunk is ${chunks.at(-1)?.type}, not finish`);

// Assemble the message exactly as useChat does. An `error` chunk reaches onError as an Error with its
// errorText; anything else reaching onError is a rejected (e.g. out-of-order) chunk.
const errorTexts = chunks.filter((chunk) => chunk.type === "error").map((chunk) => chunk.errorText);
const errors = [];
const chunkStream = new ReadableStream({
  start(controller) {
    for (const chunk of chunks) controller.enqueue(chunk);
    controller.close();
  },
});
// Continuing an assistant message (after a tool output or approval), useChat passes it in.
const last = body.messages?.at(-1);
const continued = body.messageId !== undefined && last?.id === body.messageId ? last : undefined;
let message;
for await (const snapshot of ai.readUIMessageStream({
  message: continued,
  stream: chunkStream,
  onError: (error) => {
    const text = String(error?.message ?? error);
    const index = errorTexts.indexOf(text);
    if (index >= 0) errorTexts.splice(index, 1);
    else errors.push(text);
  },
})) {
  message = snapshot;
}
if (errors.length > 0) fail(`readUIMessageStream rejected the stream: ${errors.join("; ")}`);

process.stdout.write(JSON.stringify({ headers, chunks, message }));
