"""Memory of the TF-IDF stand-in for sentence embeddings (Historical Italian WSD, 3.1).

    .venv/bin/python bench/italian_tfidf.py [--texts 58342] [--dense-texts 4000]

`pair_similarity` embeds phrases and answers together. On the whole LeggoManzoni
repository read the old way (translations taken for commentaries: 29,171 phrases, so
58,342 texts) the old dense TF-IDF matrix needed tens of GiB. This script builds texts of
the same shape (3-12 words drawn from a 5,000-word vocabulary, seeded) and runs, each in a
fresh process:

  sparse    histbench's Embedder("tfidf") + pair_similarity on all the texts (CSR matrices);
  baseline  the same vectoriser made dense with .toarray() (the old code path), on
            --dense-texts texts only (all of them would not fit in memory);

and prints each process's CPU time, wall time and peak RSS, the dense matrix size the
baseline would need for all the texts (rows x vocabulary x 4 bytes), and the ratio of
that size to the sparse run's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
import numpy as np
n, mode = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(0)
letters = np.array(list("abcdefghilmnoprstuvz"))
vocab = ["".join(rng.choice(letters, size=int(rng.integers(3, 11)))) for _ in range(5000)]
texts = [" ".join(rng.choice(vocab, size=int(rng.integers(3, 13)))) for _ in range(n)]
half = n // 2
start, cpu = time.perf_counter(), time.process_time()
if mode == "sparse":
    from histbench.builders.italian.embeddings import Embedder, pair_similarity
    sims = pair_similarity(Embedder("tfidf"), texts[:half], texts[half:])
    features = None
else:
    from sklearn.feature_extraction.text import TfidfVectorizer
    matrix = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), lowercase=True).fit_transform(texts)
    dense = matrix.toarray().astype(np.float32)
    dense /= np.maximum(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12)
    sims = np.einsum("ij,ij->i", dense[:half], dense[half:])
    features = matrix.shape[1]
print(json.dumps({"wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "features": features, "mean_similarity": float(np.mean(sims))}))
"""


def run(n: int, mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(n), mode], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=58342)
    parser.add_argument("--dense-texts", type=int, default=4000)
    args = parser.parse_args()
    started = time.perf_counter()
    sparse_run = run(args.texts, "sparse")
    dense_run = run(args.dense_texts, "dense")
    # features counted on the baseline's smaller sample: the full vocabulary is larger, so this is a lower bound
    dense_bytes = args.texts * dense_run["features"] * 4
    print(f"sparse   {args.texts:>7,} texts: cpu {sparse_run['cpu_s']:.1f} s, wall {sparse_run['wall_s']:.1f} s, "
          f"peak RSS {sparse_run['peak_rss_mb']:,.0f} MB")
    print(f"baseline {args.dense_texts:>7,} texts (dense): cpu {dense_run['cpu_s']:.1f} s, wall {dense_run['wall_s']:.1f} s, "
          f"peak RSS {dense_run['peak_rss_mb']:,.0f} MB, {dense_run['features']:,} features")
    print(f"dense matrix for {args.texts:,} texts: >= {dense_bytes / 2**30:,.1f} GiB; "
          f"ratio to the sparse run's peak RSS: {dense_bytes / 2**20 / sparse_run['peak_rss_mb']:,.0f}x")
    print(f"(this script: {time.perf_counter() - started:.0f} s wall)")


if __name__ == "__main__":
    main()
