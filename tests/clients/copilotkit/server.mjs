// The CopilotKit runtime for the browser tests, on loopback: @copilotkit/runtime with one HttpAgent
// ("default") pointed at a chatgate AG-UI URL, under /api/copilotkit; every other path serves the
// built app from dist/. Same origin for the page and its runtime, as a real deployment has it.
//
// usage: node server.mjs AG_UI_URL      prints {"url": "http://127.0.0.1:PORT"} once listening.

import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { HttpAgent } from "@ag-ui/client";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

const agUiUrl = process.argv[2];
if (!agUiUrl) {
  process.stderr.write("usage: node server.mjs AG_UI_URL\n");
  process.exit(2);
}
const dist = join(fileURLToPath(new URL(".", import.meta.url)), "dist");
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml" };

const copilot = createCopilotNodeListener({
  runtime: new CopilotRuntime({ agents: { default: new HttpAgent({ url: agUiUrl }) } }),
  basePath: "/api/copilotkit",
  activateChannels: false,
});

async function serveStatic(request, response) {
  const path = new URL(request.url, "http://x").pathname;
  const file = normalize(join(dist, path === "/" ? "index.html" : path));
  if (!file.startsWith(dist)) return response.writeHead(404).end();
  try {
    const body = await readFile(file);
    response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" }).end(body);
  } catch {
    response.writeHead(404).end();
  }
}

const server = createServer((request, response) =>
  request.url.startsWith("/api/copilotkit") ? copilot(request, response) : serveStatic(request, response),
);
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}` }) + "\n");
});
