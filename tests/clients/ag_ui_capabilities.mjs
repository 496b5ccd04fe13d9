// Reads an agent's capabilities the way docs/protocols.md tells an app to: an HttpAgent subclass whose
// getCapabilities() fetches `${url}/capabilities`. Exits non-zero when AgentCapabilitiesSchema rejects
// the answer or it holds a field the schema does not declare (ag_ui_strict.mjs).
// stdin: {url, headers?}   stdout: the AgentCapabilities
import { readFileSync } from "node:fs";
import { HttpAgent } from "@ag-ui/client";
import { AgentCapabilitiesSchema, strictProblems } from "./ag_ui_strict.mjs";

// The three lines of docs/protocols.md.
class ChatgateAgent extends HttpAgent {
  async getCapabilities() { return (await fetch(`${this.url}/capabilities`, { headers: this.headers })).json(); }
}

const { url, headers } = JSON.parse(readFileSync(0, "utf8"));
const capabilities = await new ChatgateAgent({ url, headers: headers ?? {} }).getCapabilities();
const problems = strictProblems(AgentCapabilitiesSchema, capabilities);
if (problems.length > 0) {
  console.error(`${problems.join("; ")}\n${JSON.stringify(capabilities)}`);
  process.exit(1);
}
process.stdout.write(JSON.stringify(capabilities));
