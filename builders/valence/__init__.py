"""Temporal valence of masked language models (Cuscito, Ferrara and Ruskov 2024:
Early Modern vs Modern English).

Builds the `sentences` config (one masked sentence per row with its group and valence rho)
and, when an annotation file is given, the `annotations` config (sigma per sentence x token).
The `predictions` config only exists after a run: `histbench valence package RUN` writes a
dataset folder with all three configs through the same writer (see eval/valence).

Options recorded in histbench.json and read back by the evaluator:
  scale          the valence scale (default -1,-0.5,0,0.5,1)
  groups         the allowed groups in report order (default: any; EME, neutral, ME first)
  mask_pattern   an extra regular expression that spells the mask
  case_sensitive_tokens   match predicted tokens to annotations without case folding
"""

from __future__ import annotations

import argparse

from histbench.builders.machinery.build import BenchmarkBuilder, BuildContext
from histbench.builders.machinery.writer import BuildOutput
from histbench.core.errors import SourceError, UsageError

from .annotations import read_annotations
from .scale import Scale, ScaleError
from .sentences import GroupSet, read_sentences


class ValenceBuilder(BenchmarkBuilder):
    name = "valence"
    version = "1.0.0"
    title = "Temporal valence of masked language models"
    default_config = "sentences"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--scale", default=None, metavar="V1,V2,...",
            help="the valence scale: increasing values within [-1, 1], written with = because it starts with a "
            "minus: --scale=-1,0,1 (default -1,-0.5,0,0.5,1)",
        )
        parser.add_argument(
            "--groups", default=None, metavar="G1,G2,...",
            help="the allowed sentence groups in report order (default: any label; EME, neutral, ME first)",
        )
        parser.add_argument(
            "--mask-pattern", default=None, metavar="REGEX",
            help="an extra spelling of the mask as a regular expression, e.g. '_{3,}' (built in: [MASK], <mask>, {mask})",
        )
        parser.add_argument(
            "--annotator", default=None,
            help="annotator name for --annotations files without an 'annotator' column",
        )
        parser.add_argument(
            "--case-sensitive-tokens", action="store_true",
            help="match predicted tokens and annotated tokens exactly (default: case-folded, so "
            "'Thou' from a cased model and 'thou' from an uncased one share one annotation)",
        )

    def options_from_args(self, args: argparse.Namespace) -> dict:
        try:
            scale = Scale.parse(args.scale)
        except ScaleError as exc:
            raise UsageError(f"--scale: {exc}") from exc
        groups = GroupSet.parse(args.groups)
        return {
            "scale": scale.to_list(),
            "groups": list(groups.allowed) if groups.allowed else None,
            "mask_pattern": args.mask_pattern,
            "annotator": args.annotator,
            "case_sensitive_tokens": bool(args.case_sensitive_tokens),
        }

    def demo_options(self) -> dict:
        return {"scale": list(Scale().values), "groups": ["EME", "neutral", "ME"], "mask_pattern": None,
                "annotator": None, "case_sensitive_tokens": False}

    def build(self, ctx: BuildContext) -> BuildOutput:
        try:
            scale = Scale.parse(ctx.options.get("scale"))
        except ScaleError as exc:
            raise UsageError(f"scale: {exc}") from exc
        groups = GroupSet(tuple(ctx.options["groups"]) if ctx.options.get("groups") else None)
        path = ctx.path("sentences")
        if path is None:
            raise UsageError("valence: --sentences is required")
        records, stats = read_sentences(path, scale=scale, groups=groups, mask_pattern=ctx.options.get("mask_pattern"))
        ctx.log(f"{len(records)} sentences in {len(stats['groups'])} groups")
        configs = {"sentences": {"test": records}}
        summary = {"scale": scale.to_list(), "sentences": stats}
        annotation_paths = ctx.paths("annotations")
        if annotation_paths:
            texts = {r["sentence_id"]: r["text"] for r in records}
            fold = not ctx.options.get("case_sensitive_tokens", False)
            merged: dict[tuple, dict] = {}
            per_file = []
            for annotation_path in annotation_paths:
                annotations, astats = read_annotations(
                    annotation_path, scale=scale, sentences=texts, default_annotator=ctx.options.get("annotator"),
                    fold_case=fold,
                )
                for a in annotations:
                    key = (a.annotator, a.sentence_id, a.token.casefold() if fold else a.token)
                    if key in merged and (merged[key]["sigma"], merged[key]["skipped"]) != (a.sigma, a.skipped):
                        raise SourceError(
                            f"annotator {a.annotator!r} gives token {a.token!r} in sentence {a.sentence_id!r} "
                            "different values in two annotation files", file=annotation_path,
                        )
                    merged[key] = a.to_record()
                per_file.append({"file": annotation_path.name, **astats})
            order = {r["sentence_id"]: i for i, r in enumerate(records)}
            rows = sorted(merged.values(), key=lambda r: (order[r["sentence_id"]], r["token"].casefold(), r["token"], r["annotator"]))
            configs["annotations"] = {"test": rows}
            summary["annotations"] = {
                "files": per_file,
                "rows": len(rows),
                "skipped": sum(r["skipped"] for r in rows),
                "sentences_covered": len({r["sentence_id"] for r in rows}),
                "annotators": sorted({r["annotator"] for r in rows}),
                "methods": sorted({r["method"] for r in rows}),
            }
        return BuildOutput(configs=configs, summary=summary, summary_markdown=summary_markdown(summary))


def summary_markdown(summary: dict) -> str:
    from histbench.core.markdown import markdown_table

    stats = summary["sentences"]
    scale = summary["scale"]
    header = ["group", "sentences"] + [f"rho={v:g}" for v in scale]
    rows = [[g, stats["group_counts"][g]] + [stats["rho_counts"][g][f"{v:g}"] for v in scale] for g in stats["groups"]]
    lines = [
        f"{stats['sentences']} masked sentences read from {stats['rows']} rows; valence scale "
        "{" + ", ".join(f"{v:g}" for v in scale) + "}.",
        "",
        markdown_table(rows, header),
        "",
        f"- mask spellings found: {', '.join(f'`{s}`' for s in stats['mask_spellings'])} (stored as `[MASK]`)",
    ]
    if stats["ids_generated"]:
        lines.append("- no sentence_id column: ids s001, s002, ... were given in file order")
    if stats["duplicate_texts"]:
        dup = "; ".join(", ".join(ids) for ids in stats["duplicate_texts"].values())
        lines.append(f"- sentences with identical text (kept, check they are intended): {dup}")
    if stats["ignored_columns"]:
        lines.append(f"- columns not used: {', '.join(stats['ignored_columns'])}")
    if stats["empty_groups"]:
        lines.append(f"- declared groups without sentences: {', '.join(stats['empty_groups'])}")
    if "annotations" in summary:
        a = summary["annotations"]
        dropped = sum(f["exact_duplicates_dropped"] for f in a["files"])
        lines.append(
            f"- annotations: {a['rows']} sentence x token rows ({a['skipped']} skipped) for "
            f"{a['sentences_covered']} sentences by {', '.join(a['annotators'])} "
            f"(method: {', '.join(a['methods'])}); exact duplicate rows dropped: {dropped}"
        )
    return "\n".join(lines)


BUILDER = ValenceBuilder()
