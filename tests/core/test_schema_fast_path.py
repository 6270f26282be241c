"""The fast schema path (histbench/core/schema.py compile_check) never accepts what jsonschema rejects."""

from __future__ import annotations

import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from histbench.core.resources import Resources
from histbench.core.schema import compile_check

CONFIGS = ("pairs", "items", "undated", "mcq")
# every schema of the project (other benchmarks' too): the fast path must be safe for all of them
ALL_SCHEMAS = sorted(p.name for p in Resources.default().schemas.glob("*.schema.json"))


def _schema(config):
    name = config if config.endswith(".json") else f"chronoculture.{config}.schema.json"
    return json.loads((Resources.default().schemas / name).read_text())


def _example(node):
    kind = next(t for t in ([node["type"]] if isinstance(node["type"], str) else node["type"]) if t != "null")
    if kind == "object":
        return {k: _example(v) for k, v in node["properties"].items()}
    if kind == "array":
        return [_example(node["items"]), _example(node["items"])]
    if "enum" in node:
        return node["enum"][0]
    return {"string": "x", "integer": 2, "number": 0.5, "boolean": True}[kind]


def test_every_chronoculture_schema_compiles_and_accepts_a_valid_record():
    for config in CONFIGS:
        schema = _schema(config)
        check = compile_check(schema)
        assert check is not None, config
        record = _example(schema)
        assert Draft202012Validator(schema).is_valid(record)
        assert check(record)


MUTATIONS = st.sampled_from(["drop", "extra", "none", "string", "negative", "big", "bool", "float_int", "nested"])


@settings(max_examples=150, deadline=None)
@given(config=st.sampled_from(ALL_SCHEMAS), mutation=MUTATIONS, pick=st.integers(0, 10_000))
def test_fast_check_is_never_more_permissive_than_jsonschema(config, mutation, pick):
    schema = _schema(config)
    check = compile_check(schema)
    if check is None:  # a schema outside the fast subset: jsonschema checks every record
        return
    record = copy.deepcopy(_example(schema))
    key = list(record)[pick % len(record)]
    value = record[key]
    if mutation == "drop":
        del record[key]
    elif mutation == "extra":
        record["unexpected"] = 1
    elif mutation == "none":
        record[key] = None
    elif mutation == "string":
        record[key] = "text"
    elif mutation == "negative":
        record[key] = -1 if not isinstance(value, list) else [-1.0]
    elif mutation == "big":
        record[key] = 2 if not isinstance(value, list) else [2.0, "a"]
    elif mutation == "bool":
        record[key] = True
    elif mutation == "float_int":
        record[key] = 1.0
    elif mutation == "nested" and isinstance(value, list) and value and isinstance(value[0], dict):
        value[0]["unexpected"] = 1
    valid = Draft202012Validator(schema).is_valid(record)
    if check(record):
        assert valid, (config, mutation, key)


def test_fast_check_rejects_non_finite_numbers_when_asked():
    schema = _schema("pairs")
    record = _example(schema)
    record["noise_p95"] = float("nan")
    assert compile_check(schema)(record) is False  # NaN fails the minimum; jsonschema then decides
    record["noise_p95"] = 0.1
    record["option_values"] = [1.0, float("inf")]  # no bounds on option values
    assert compile_check(schema)(record) is True
    assert compile_check(schema, finite=True)(record) is False


SCALAR_ARRAYS = {  # the item schemas the project's arrays use, and nullable / bounded variants
    "labels": {"type": "string"},
    "families": {"type": "string", "enum": ["ground_truth", "manual", "other"]},
    "values": {"type": "number"},
    "shares": {"type": "number", "minimum": 0, "maximum": 1},
    "open_shares": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    "indices": {"type": "integer", "minimum": 0},
    "flags": {"type": "boolean"},
    "maybe_labels": {"type": ["string", "null"]},
    "maybe_indices": {"type": ["integer", "null"]},
}
POOL = ["ground_truth", "manual", "x", "", -1, 0, 2, True, None, 0.0, 0.5, 1.0, -0.5, 1.5,
        float("nan"), float("inf"), float("-inf"), [1], {"a": 1}]
_CLASSES = {"string": (str,), "integer": (int,), "number": (float, int), "boolean": (bool,)}
ARRAYS = [[]] + [[a] for a in POOL] + [[a, b] for a in POOL for b in POOL]


@pytest.mark.parametrize("finite", [False, True])
@pytest.mark.parametrize("name", sorted(SCALAR_ARRAYS))
def test_arrays_of_scalars_are_checked_as_jsonschema_checks_each_element(name, finite):
    """The set-based check of a scalar array (compile_check's scalar_items) against jsonschema, on
    every array of up to two elements from a pool of strings, integers, booleans, floats (NaN and
    infinities too), None and containers: it never accepts what jsonschema rejects, and it accepts
    every valid array of elements of the exact classes (finite numbers where finite=True), as the
    per-element expression did."""
    item = SCALAR_ARRAYS[name]
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": item}}, "required": ["a"],
              "additionalProperties": False}
    check = compile_check(schema, finite=finite)
    kinds = [item["type"]] if isinstance(item["type"], str) else item["type"]
    validator = Draft202012Validator(schema)
    for values in ARRAYS:
        valid = validator.is_valid({"a": values})
        accepted = check({"a": values})
        if accepted:
            assert valid, (name, values)
        exact = all(type(v) in _CLASSES[kinds[0]] or (v is None and "null" in kinds) for v in values)
        finite_ok = exact and (not (finite and kinds[0] == "number") or all(v is None or math.isfinite(v) for v in values))
        # NaN passes jsonschema's bounds (every comparison is false) but not the fast path's: the
        # writer then asks jsonschema, so only arrays without NaN must be accepted where bounds exist
        bounded_nan = finite_ok and any(k in item for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")) \
            and any(v != v for v in values if v is not None)
        if valid and finite_ok and not bounded_nan:
            assert accepted, (name, values)
