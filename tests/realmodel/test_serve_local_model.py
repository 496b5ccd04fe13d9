"""``./scripts/serve.sh --local-model``: one command serves chatgate on a real model, and stops both.

It uses the same cached llama-server and models as the other realmodel tests, starts llama-server on
``LLAMA_PORT`` with SmolLM2-135M-Instruct (the default; its GGUF's own ChatML template) and chatgate with
docs/examples/local-model.toml, and a SIGTERM to the script stops both.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from tests.processes import stop_process
from tests.realmodel.llama import ROOT, installed_llama_server
from tests.servers import _free_port as free_port

SERVE_SECONDS = 300  # loading the model, then starting chatgate: over 60 s on a loaded machine

pytestmark = pytest.mark.realmodel


def _listening(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def test_serve_local_model_serves_the_chat_on_a_real_model_and_stops_it(tmp_path: Path) -> None:
    installed_llama_server()  # fails clearly when scripts/install-llama-server.sh has not run
    llama_port, port = free_port(), free_port()
    while port == llama_port:  # a port just freed can come back
        port = free_port()
    env = {**os.environ, "LLAMA_PORT": str(llama_port), "TMPDIR": str(tmp_path)}
    log = tmp_path / "serve.log"
    with log.open("wb") as output:
        script = subprocess.Popen(
            ["bash", str(ROOT / "scripts/serve.sh"), "--local-model", "--port", str(port)],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVE_SECONDS
        while not _listening(f"{url}/healthz"):
            assert script.poll() is None, log.read_text()
            assert time.monotonic() < deadline, f"serve.sh --local-model did not serve within {SERVE_SECONDS} s"
            time.sleep(0.2)
        agents = httpx.get(f"{url}/agents").json()["agents"]
        assert "instruction-tuned" in agents[0]["description"] and "*base*" in agents[0]["description"]
        props = httpx.get(f"http://127.0.0.1:{llama_port}/props").json()
        assert Path(props["model_path"]) == installed_llama_server()["LLAMA_SMOLLM2"]
        assert "<|im_start|>" in props["chat_template"]  # the GGUF's own: none given
        body = {"threadId": "t", "runId": "r", "messages": [{"id": "u1", "role": "user", "content": "Hello"}]}
        with httpx.stream("POST", f"{url}/ag-ui", json={**body, "tools": [], "context": []}, timeout=60) as response:
            types = []
            for line in response.iter_lines():
                if line.startswith("data: "):
                    types.append(json.loads(line[6:])["type"])
                    if types[-1] == "TEXT_MESSAGE_CONTENT":
                        break  # the model answers: enough (the example allows 256 tokens)
        assert types[:2] == ["RUN_STARTED", "STEP_STARTED"] and types[-1] == "TEXT_MESSAGE_CONTENT"
    finally:
        stop_process(script, timeout=30)  # serve.sh stops chatgate and llama-server; any it left, by PID
    assert not _listening(f"{url}/healthz")
    assert not _listening(f"http://127.0.0.1:{llama_port}/health")
