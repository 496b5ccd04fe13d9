// The AI SDK's own Node server for the benchmark: streamText -> UI message stream (useChat's protocol).
//   node server.mjs UPSTREAM_URL   relays an OpenAI-compatible upstream (@ai-sdk/openai-compatible)
//   node server.mjs mock           the SDK's mock model (ai/test), 200 one-word text deltas
// Binds 127.0.0.1 on a free port and prints the port on the first line of stdout.
import http from "node:http";
import { convertToModelMessages, simulateReadableStream, streamText } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";

const TOKENS = 200;
const source = process.argv[2];

function mockModel() {
  const chunks = [
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    ...Array.from({ length: TOKENS }, (_, n) => ({ type: "text-delta", id: "t1", delta: `word${String(n).padStart(3, "0")} ` })),
    { type: "text-end", id: "t1" },
    {
      type: "finish",
      finishReason: { unified: "stop", raw: "stop" },
      usage: {
        inputTokens: { total: 12, noCache: 12, cacheRead: 0, cacheWrite: 0 },
        outputTokens: { total: TOKENS, text: TOKENS, reasoning: 0 },
      },
    },
  ];
  return new MockLanguageModelV4({ doStream: async () => ({ stream: simulateReadableStream({ chunks, chunkDelayInMs: null }) }) });
}

const model =
  source === "mock"
    ? mockModel()
    : createOpenAICompatible({ name: "fake", baseURL: `${source}/v1`, apiKey: "bench" }).chatModel("bench");

const server = http.createServer(async (req, res) => {
  if (req.method !== "POST") {
    res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    return;
  }
  const parts = [];
  for await (const part of req) parts.push(part);
  const { messages } = JSON.parse(Buffer.concat(parts).toString());
  const result = streamText({ model, messages: await convertToModelMessages(messages) });
  result.pipeUIMessageStreamToResponse(res);
});
server.listen(0, "127.0.0.1", 4096, () => console.log(server.address().port));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
