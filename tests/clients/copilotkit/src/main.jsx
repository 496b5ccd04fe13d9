// A minimal CopilotKit app for the browser tests: CopilotChat on the runtime served by server.mjs
// (whose HttpAgent talks to chatgate's AG-UI route), a frontend tool and an approval interrupt.
// `?runtime=URL` points runtimeUrl elsewhere: at chatgate's own [copilotkit] path, with no Node runtime
// (tests/e2e/test_copilotkit_runtime_browser.py); `?thread=ID` pins the chat's thread, and `?single=1` asks
// for the runtime's single-route transport. `?key=KEY` sends chatgate's key as a bearer token, `?threads=1`
// shows the agent's thread list (useThreads) whose entries switch the chat to their thread (and rename or
// archive it), and `?v1=1`
// mounts the v1 `<CopilotKit>` provider instead of `<CopilotKitProvider>`.
// What a test reads or clicks carries a data-testid (tests/e2e/test_copilotkit_browser.py).

import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { z } from "zod";
import { CopilotKit } from "@copilotkit/react-core";
import { CopilotChat, CopilotKitProvider, useFrontendTool, useInterrupt, useThreads } from "@copilotkit/react-core/v2";
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
const fixedThread = query.get("thread") ?? undefined; // a fixed thread: a reload reconnects to it
const useSingleEndpoint = query.get("single") === "1" ? true : undefined; // the single-route transport
const key = query.get("key");
const headers = key ? { authorization: `Bearer ${key}` } : undefined;
const showThreads = query.get("threads") === "1";
const Provider = query.get("v1") === "1" ? CopilotKit : CopilotKitProvider;

function ThreadList({ current, onPick }) {
  const { threads, isLoading, renameThread, archiveThread } = useThreads({ agentId: "default" });
  return (
    <ul data-testid="thread-list" data-loading={String(isLoading)} style={{ width: 220, margin: 0 }}>
      {threads.map((thread) => (
        <li key={thread.id}>
          <button
            data-testid="thread-item"
            data-thread-id={thread.id}
            aria-current={thread.id === current ? "true" : undefined}
            onClick={() => onPick(thread.id)}
          >
            {thread.name ?? thread.id}
          </button>
          <button data-testid="thread-rename" onClick={() => renameThread(thread.id, `renamed ${thread.name}`)}>
            Rename
          </button>
          <button data-testid="thread-archive" onClick={() => archiveThread(thread.id)}>
            Archive
          </button>
        </li>
      ))}
    </ul>
  );
}

function App() {
  const [threadId, setThreadId] = useState(fixedThread);
  return (
    <Provider runtimeUrl={runtimeUrl} headers={headers} useSingleEndpoint={useSingleEndpoint} showDevConsole={false}>
      <Tools />
      <div style={{ height: "100vh", display: "flex" }}>
        {showThreads && <ThreadList current={threadId} onPick={setThreadId} />}
        <div style={{ flex: 1 }}>
          <CopilotChat threadId={threadId} />
        </div>
      </div>
    </Provider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
