"""How much `kill -9` costs a real evaluation: answers lost, requests paid twice.

    .venv/bin/python bench/run_store_kills.py [--kills 26] [--seed 0] [--concurrency 4]

`histbench eval chronoculture` runs on the bundled sample build (108 prompts: undated and
dated) against a loopback OpenAI-compatible server that misbehaves as real endpoints do
(seeded: 429 with Retry-After, 500 and 503, requests held until the client times out,
connections closed half-way, 200s whose JSON is cut short). The evaluator process is killed
with SIGKILL --kills times, each time after a random number (1-12) of new answers reached
records.jsonl, and restarted on the same run folder until it completes. The baseline is the
same command run once without kills, against a server with the same faults, into another
folder.

Printed: kills survived (the run completed with every prompt answered), answers the server
delivered and the run folder lost (delivered before a kill but not on disk after it), prompts
paid more than once (delivered answers beyond one per prompt) against the bound the design
gives (at most the requests in flight, i.e. the concurrency, per kill), duplicate keys in
records.jsonl, and whether predictions.jsonl is byte-identical to the uninterrupted run's;
wall and CPU time of both.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def answer(messages) -> str:
    """A deterministic reply for each prompt: parseable by the chronoculture parser or not."""
    text = messages[-1]["content"]
    number = sum(map(ord, text)) % 100
    if number % 5 == 0:
        return "I cannot say."                       # a parse failure: stored, never asked again
    return f'```json\n{{"share": {number / 100:.2f}}}\n```'


def faults(seed: int):
    rng = random.Random(seed)

    def fault_for(n: int, body: dict) -> str | None:
        roll = rng.random()
        for kind, p in (("429", 0.05), ("500", 0.03), ("503", 0.02), ("timeout", 0.02), ("close", 0.03),
                        ("truncate", 0.03)):
            if roll < p:
                return kind
            roll -= p
        return None

    return fault_for


def build_sample(root: Path) -> Path:
    from histbench.builders.chronoculture import BUILDER
    from histbench.builders.machinery.build import run_build

    given = {role: str(paths[0]) if not BUILDER.manifest().inputs[role].multiple else [str(p) for p in paths]
             for role, paths in BUILDER.manifest().sample_paths().items()}
    return run_build(BUILDER, given, options=BUILDER.demo_options(), out_root=root)


def command(spec: str, dataset: Path, out: Path, concurrency: int) -> list[str]:
    return [sys.executable, "-m", "histbench.cli", "eval", "chronoculture", "--dataset", str(dataset),
            "--out", str(out), "--model", spec, "--max-concurrency", str(concurrency),
            "--model-option", "timeout=0.5", "--model-option", "backoff_base=0.05",
            "--model-option", "backoff_max=0.2", "--model-option", "max_retries=30"]


def lines(path: Path) -> int:
    return len(path.read_bytes().splitlines()) if path.exists() else 0


def keys(path: Path) -> Counter:
    return Counter(json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip())


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=26)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    # the loopback server is a test fixture (tests/servers/), not part of the installed package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.servers.loopback import LoopbackChatServer

    env = {**os.environ, "HISTBENCH_PROGRESS": "0"}
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="histbench-kills-") as tmp:
        root = Path(tmp)
        dataset = build_sample(root / "build")

        # the baseline: one uninterrupted run
        server = LoopbackChatServer(answer, delay=0.02, hang=1.0).start()
        server.fault_for = faults(args.seed)
        clean = root / "clean"
        started, cpu = time.perf_counter(), children_cpu()
        subprocess.run(command(server.spec(), dataset, clean, args.concurrency), env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        clean_wall, clean_cpu = time.perf_counter() - started, children_cpu() - cpu
        prompts = len(keys(clean / "records.jsonl"))
        server.stop()

        # the same run, killed again and again
        server = LoopbackChatServer(answer, delay=0.02, hang=1.0).start()
        server.fault_for = faults(args.seed)
        run = root / "killed"
        records = run / "records.jsonl"
        kills, unwritten, seen_on_disk, torn = 0, [], set(), 0
        started, cpu = time.perf_counter(), children_cpu()
        while True:
            proc = subprocess.Popen(command(server.spec(), dataset, run, args.concurrency), env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if kills < args.kills:
                target = lines(records) + rng.randint(1, 12)
                while proc.poll() is None and lines(records) < target:
                    time.sleep(0.005)
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                    kills += 1
                    time.sleep(0.3)   # answers in flight reach a dead socket (and count as delivered)
                    prompts_on_disk = set()
                    for line in records.read_text().split("\n"):
                        try:
                            record = json.loads(line)
                        except ValueError:
                            torn += bool(line.strip())
                            continue
                        seen_on_disk.add(record["key"])
                        prompts_on_disk.add(record["request"]["messages"][-1]["content"])
                    # delivered to some process but on no disk: what the next process pays again
                    unwritten.append(len(set(server.delivered_keys) - prompts_on_disk))
                    continue
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"the resumed run failed: {err.decode()[-2000:]}")
            break
        killed_wall, killed_cpu = time.perf_counter() - started, children_cpu() - cpu
        server.stop()

        stored = keys(records)
        delivered = server.delivered_keys
        paid_twice = sum(n - 1 for n in delivered.values() if n > 1)
        identical = (run / "predictions.jsonl").read_bytes() == (clean / "predictions.jsonl").read_bytes()
        print(f"prompts: {prompts}; faults injected per request: 429 5%, 500 3%, 503 2%, timeout 2%, "
              f"closed mid-response 3%, truncated JSON 3%")
        print(f"kills survived: {kills} of {args.kills} (the run then completed with every prompt answered: "
              f"{len(stored) == prompts})")
        print(f"answers lost (on disk after a kill, missing at the end): {len(seen_on_disk - set(stored))}; "
              f"torn last lines cut off and asked again: {torn}")
        print(f"answers delivered but on no disk right after a kill: at most {max(unwritten, default=0)} "
              f"(bound: the {args.concurrency} requests in flight)")
        print(f"prompts paid more than once: {paid_twice} (bound: {args.concurrency} in flight x {kills} kills = "
              f"{args.concurrency * kills}); answers delivered per prompt {sum(delivered.values()) / prompts:.3f} "
              "vs 1.000 uninterrupted")
        print(f"duplicate keys in records.jsonl: {sum(n - 1 for n in stored.values() if n > 1)}")
        print(f"predictions.jsonl byte-identical to the uninterrupted run: {identical}")
        print(f"uninterrupted: {clean_wall:.1f} s wall, {clean_cpu:.1f} s CPU; killed {kills} times: "
              f"{killed_wall:.1f} s wall, {killed_cpu:.1f} s CPU (ratio {killed_wall / clean_wall:.2f} wall, "
              f"{killed_cpu / max(clean_cpu, 1e-9):.2f} CPU)")


if __name__ == "__main__":
    main()
