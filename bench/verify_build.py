"""How much verifying a build before scoring costs, cold and on a rerun.

`BuiltDataset.open` (what `histbench eval` opens) checks every parquet file of the build
against the sha256 its histbench.json records (histbench.core.dataset.verify_build). The
first verification hashes every file; a rerun on unchanged files reads only their stat
(size, mtime_ns, ctime_ns, inode, device), from the cache under the datasets cache.

Baseline: the cold verification (every file hashed), in the same run. The script writes a
synthetic build (random bytes under parquet names: verification never parses them; a card
whose data_files name them; a manifest with their sha256) and times, interleaved
(cold, warm, cold, warm ...), a verification with the hash cache removed and one with it
in place, wall and CPU time, and prints the median ratio cold / warm.

    .venv/bin/python bench/verify_build.py [--files 8] [--mb 32] [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def make_build(root: Path, files: int, mb: int) -> Path:
    folder = root / "bench-1.0.0"
    (folder / "data" / "items").mkdir(parents=True)
    outputs = []
    for index in range(files):
        name = f"data/items/test-{index:05d}-of-{files:05d}.parquet"
        data = os.urandom(mb * 1024 * 1024)
        (folder / name).write_bytes(data)
        outputs.append({"path": name, "config": "items", "split": "test",
                        "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
    manifest = {"benchmark": "bench", "version": "1.0.0", "outputs": outputs, "rows": {"items": {"test": files}},
                "data_sha256": hashlib.sha256("".join(o["sha256"] for o in outputs).encode()).hexdigest()}
    (folder / "histbench.json").write_text(json.dumps(manifest))
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: items\n  data_files:\n  - split: test\n"
                                      "    path: data/items/test-*.parquet\n---\n# bench\n")
    return folder


def timed(call) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--mb", type=int, default=32, help="size of each file in MiB")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HF_DATASETS_CACHE"] = str(Path(tmp) / "hf-cache")
        import datasets

        datasets.config.HF_DATASETS_CACHE = os.environ["HF_DATASETS_CACHE"]
        from histbench.core.dataset import VERIFIED_CACHE, verify_build

        folder = make_build(Path(tmp), args.files, args.mb)
        cache = Path(os.environ["HF_DATASETS_CACHE"]) / VERIFIED_CACHE
        expected = json.loads((folder / "histbench.json").read_text())["data_sha256"]
        cold, warm = [], []
        for _ in range(args.repeats):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(timed(lambda: verify_build(folder)))
            warm.append(timed(lambda: verify_build(folder)))
        assert verify_build(folder) == expected
    size = args.files * args.mb
    print(f"build: {args.files} files, {size} MiB; {args.repeats} interleaved rounds; load average {os.getloadavg()[0]:.2f}")
    for label, runs in (("cold (every file hashed; baseline)", cold), ("rerun (stat cache)", warm)):
        print(f"  {label:36s} wall {statistics.median(r[0] for r in runs) * 1000:9.2f} ms   "
              f"cpu {statistics.median(r[1] for r in runs) * 1000:9.2f} ms")
    ratios = [c[0] / w[0] for c, w in zip(cold, warm, strict=True)]
    cpu_ratios = [c[1] / max(w[1], 1e-9) for c, w in zip(cold, warm, strict=True)]
    print(f"cold / rerun: wall {statistics.median(ratios):.0f}x, cpu {statistics.median(cpu_ratios):.0f}x (median of rounds)")


if __name__ == "__main__":
    main()
