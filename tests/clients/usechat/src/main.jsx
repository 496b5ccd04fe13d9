// A minimal useChat app for the browser tests: one source, built once per supported `ai` major
// (vite.config.js points `ai` and `@ai-sdk/react` at that major's packages).
//
// Query string: base (chatgate's base URL; default this page's origin), agent (default "default"),
// answer (what the frontend tool answers; default "red").
// Everything a test reads or clicks carries a data-testid (tests/e2e/test_usechat_browser.py).

import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import * as ai from "ai";

const params = new URLSearchParams(location.search);
const base = params.get("base") || location.origin;
const agent = params.get("agent") || "default";
const answer = params.get("answer") || "red";
const FRONTEND_TOOL = "pick_color";

function resendWhen(options) {
  if (ai.lastAssistantMessageIsCompleteWithToolCalls(options)) return true;
  // ai 5 has no approvals, so no helper for them.
  const approvals = ai.lastAssistantMessageIsCompleteWithApprovalResponses;
  return approvals ? approvals(options) : false;
}

const transport = new ai.DefaultChatTransport({ api: `${base}/agents/${encodeURIComponent(agent)}/chat` });

function toolName(part) {
  return part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
}

function Part({ part, chat }) {
  if (part.type === "text") return <p data-testid="part-text">{part.text}</p>;
  if (part.type === "reasoning") return <p data-testid="part-reasoning"><i>{part.text}</i></p>;
  if (!(part.type.startsWith("tool-") || part.type === "dynamic-tool")) return null;
  const name = toolName(part);
  // ai 6 renamed addToolResult to addToolOutput; ai 5 has only the old name in early releases.
  const addToolOutput = chat.addToolOutput ?? chat.addToolResult;
  return (
    <div data-testid="part-tool" data-tool-name={name} data-state={part.state}>
      <code>
        {name} [{part.state}] {JSON.stringify(part.input ?? {})}
      </code>
      {part.state === "output-available" && <div data-testid="tool-output">{JSON.stringify(part.output)}</div>}
      {part.state === "output-error" && <div data-testid="tool-error">{part.errorText}</div>}
      {part.state === "input-available" && name === FRONTEND_TOOL && (
        <button
          data-testid="answer-tool"
          onClick={() => addToolOutput({ tool: name, toolCallId: part.toolCallId, output: answer })}
        >
          Answer {answer}
        </button>
      )}
      {part.state === "approval-requested" && (
        <>
          <button
            data-testid="approve"
            onClick={() => chat.addToolApprovalResponse({ id: part.approval.id, approved: true })}
          >
            Approve
          </button>
          <button
            data-testid="deny"
            onClick={() => chat.addToolApprovalResponse({ id: part.approval.id, approved: false, reason: "not now" })}
          >
            Deny
          </button>
        </>
      )}
    </div>
  );
}

function App() {
  const chat = useChat({ transport, sendAutomaticallyWhen: resendWhen });
  const [input, setInput] = useState("");
  const busy = chat.status === "submitted" || chat.status === "streaming";
  const send = (event) => {
    event.preventDefault();
    if (!input.trim()) return;
    chat.sendMessage({ text: input });
    setInput("");
  };
  return (
    <main>
      <h1>
        useChat on ai <span data-testid="ai-major">{__AI_MAJOR__}</span>
      </h1>
      <ol data-testid="messages">
        {chat.messages.map((message) => (
          <li key={message.id} data-testid="message" data-role={message.role}>
            <b>{message.role}</b>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} chat={chat} />
            ))}
          </li>
        ))}
      </ol>
      <p>
        status: <span data-testid="status">{chat.status}</span>
      </p>
      {chat.error && <p data-testid="error" role="alert">{chat.error.message}</p>}
      <form onSubmit={send}>
        <label>
          Message <input data-testid="input" value={input} onChange={(event) => setInput(event.target.value)} />
        </label>
        <button data-testid="send" type="submit" disabled={busy}>
          Send
        </button>
        <button data-testid="regenerate" type="button" disabled={busy} onClick={() => chat.regenerate()}>
          Regenerate
        </button>
        <button data-testid="stop" type="button" disabled={!busy} onClick={() => chat.stop()}>
          Stop
        </button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
