"""histbench evaluators: one module or package per benchmark, the evaluator interface
(`plugin`), statistics, reports and the per-item viewer. The model engine they score with
is in histbench.core; the benchmarks' definitions (taxonomies, scales, prompts) in
histbench.builders."""
