// Checks a useChat stream a test read off chatgate itself with the chosen `ai` major's own
// uiMessageChunkSchema (the stopped endings, which vercel_ai_run.mjs does not produce).
// stdin: {"version": 5 | 6 | 7, "text": "<the SSE body>"}
// stdout: {"problems": [...], "types": [chunk types, in order], "message": the UIMessage readUIMessageStream
// assembles from them, as useChat does (absent when a chunk was rejected)}
import { readFileSync } from "node:fs";

const { version, text } = JSON.parse(readFileSync(0, "utf8"));
const ai = await import(`ai${version}`);
const stream = new ReadableStream({
  start(controller) {
    controller.enqueue(new TextEncoder().encode(text));
    controller.close();
  },
});
const problems = [];
const chunks = [];
for await (const result of ai.parseJsonEventStream({ stream, schema: ai.uiMessageChunkSchema })) {
  if (result.success) chunks.push(result.value);
  else problems.push(`${JSON.stringify(result.rawValue)}: ${result.error}`);
}
let message;
if (problems.length === 0) {
  const chunkStream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
  for await (const snapshot of ai.readUIMessageStream({ stream: chunkStream, onError: () => {} })) message = snapshot;
}
process.stdout.write(JSON.stringify({ problems, types: chunks.map((chunk) => chunk.type), message }));
