// Runs one AG-UI run with the real @ag-ui/client against a live chatgate.
// stdin: {url, headers?, expectHttpError?, input: {threadId?, messages?, runId?, tools?, context?, forwardedProps?, resume?}}
// stdout: {events: [...], messages: [...], error?: string, httpError?: {status, payload}}
// `headers` go on every request (HttpAgent's own `headers` option). With `expectHttpError`, a refused
// request (HttpAgent throws an error carrying the HTTP status and JSON body) is reported in "httpError".
// HttpAgent.runAgent validates every event against the 1.0 schemas and verifies their order, and every
// event is checked strictly too (ag_ui_strict.mjs: no field the schema does not declare); any
// rejection exits non-zero. A run that ends in RUN_ERROR is reported in "error" (the client rejects
// such a run too, and that rejection is expected only when RUN_ERROR was the last event).
import { HttpAgent } from "@ag-ui/client";
import { EventSchema, strictProblems } from "./ag_ui_strict.mjs";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { url, input, headers, expectHttpError } = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const agent = new HttpAgent({
  url,
  headers: headers ?? {},
  threadId: input.threadId ?? "thread-1",
  initialMessages: input.messages ?? [],
});
const events = [];
const parameters = {};
for (const key of ["runId", "tools", "context", "forwardedProps", "resume"]) {
  if (input[key] !== undefined) parameters[key] = input[key];
}

let error;
try {
  await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event) });
} catch (exc) {
  if (expectHttpError && typeof exc?.status === "number") {
    process.stdout.write(JSON.stringify({ events, httpError: { status: exc.status, payload: exc.payload } }));
    process.exit(0);
  }
  if (events.at(-1)?.type !== "RUN_ERROR") {
    console.error(exc);
    process.exit(1);
  }
  error = String(exc?.message ?? exc);
}
for (const event of events) {
  const problems = strictProblems(EventSchema, event);
  if (problems.length > 0) {
    console.error(`${event.type}: ${problems.join("; ")}\n${JSON.stringify(event)}`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify({ events, messages: agent.messages, ...(error === undefined ? {} : { error }) }));
