// Checks a useChat stream a test read off chatgate itself with the chosen `ai` major's own
// uiMessageChunkSchema (the stopped endings, which vercel_ai_run.mjs does not produce).
// stdin: {"version": 5 | 6 | 7, "text": "<the SSE body>"}
// stdout: {"problems": [...], "types": [chunk types, in order]}
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
const types = [];
for await (const result of ai.parseJsonEventStream({ stream, schema: ai.uiMessageChunkSchema })) {
  if (result.success) types.push(result.value.type);
  else problems.push(`${JSON.stringify(result.rawValue)}: ${result.error}`);
}
process.stdout.write(JSON.stringify({ problems, types }));
