// Checks AG-UI events a test read off a chatgate stream itself, with @ag-ui/core's EventSchema, strictly
// (ag_ui_strict.mjs), or an AgentCapabilities document with AgentCapabilitiesSchema.
// stdin: {"events": [...]} or {"capabilities": {...}}
// stdout: {"problems": ["<index> <type>: <what is wrong>", ...]} (empty when every one passes)
import { readFileSync } from "node:fs";
import { AgentCapabilitiesSchema, EventSchema, strictProblems } from "./ag_ui_strict.mjs";

const { events, capabilities } = JSON.parse(readFileSync(0, "utf8"));
const problems = [];
(events ?? []).forEach((event, index) => {
  for (const problem of strictProblems(EventSchema, event)) problems.push(`${index} ${event?.type}: ${problem}`);
});
if (capabilities !== undefined) {
  for (const problem of strictProblems(AgentCapabilitiesSchema, capabilities)) problems.push(`capabilities: ${problem}`);
}
process.stdout.write(JSON.stringify({ problems }));
