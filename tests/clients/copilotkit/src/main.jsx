// A minimal CopilotKit app for the browser tests: CopilotChat on the runtime served by server.mjs
// (whose HttpAgent talks to chatgate's AG-UI route), a frontend tool and an approval interrupt.
// `?runtime=URL` points runtimeUrl elsewhere: at chatgate's own [copilotkit] path, with no Node runtime
// (tests/e2e/test_copilotkit_runtime_browser.py); `?thread=ID` pins the chat's thread, and `?single=1` asks
// for the runtime's single-route transport.
// What a test reads or clicks carries a data-testid (tests/e2e/test_copilotkit_browser.py).

import React from "react";
import { createRoot } from "react-dom/client";
import { z } from "zod";
import { CopilotChat, CopilotKitProvider, useFrontendTool, useInterrupt } from "@copilotkit/react-core/v2";
import "@copilotkit/react-core/v2/styles.css";

function Tools() {
  useFrontendTool({
    name: "pick_color",
    description: "Ask the user to pick a colour.",
    parameters: z.object({ palette: z.string().optional() }),
    handler: async () => "red",
  });
  useInterrupt({
    render: ({ interrupt, resolve }) => (
      <div data-testid="interrupt">
        <p data-testid="interrupt-message">{interrupt?.message}</p>
        <button data-testid="approve" onClick={() => resolve({ approved: true })}>
          Approve
        </button>
        <button data-testid="deny" onClick={() => resolve({ approved: false, reason: "not now" })}>
          Deny
        </button>
      </div>
    ),
  });
  return null;
}

const query = new URLSearchParams(window.location.search);
const runtimeUrl = query.get("runtime") ?? "/api/copilotkit";
const threadId = query.get("thread") ?? undefined; // a fixed thread: a reload reconnects to it
const useSingleEndpoint = query.get("single") === "1" ? true : undefined; // the single-route transport

function App() {
  return (
    <CopilotKitProvider runtimeUrl={runtimeUrl} useSingleEndpoint={useSingleEndpoint} showDevConsole={false}>
      <Tools />
      <div style={{ height: "100vh" }}>
        <CopilotChat threadId={threadId} />
      </div>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
