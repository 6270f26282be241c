"""Record checks against JSON Schema (2020-12) and the matching Hugging Face features.

Conventions for `schemas/<benchmark>.<config>.schema.json` (checked by
`check_schema_conventions`, which the writer calls):

- the top level is an object with `properties`, `required` listing every property and
  `additionalProperties: false`: every record has every column, optional values are
  null (declare them as `"type": ["string", "null"]`);
- nested objects follow the same rule and become struct columns; arrays need `items`;
- free-form mappings are not columns: store them as JSON text (`"type": "string",
  "contentMediaType": "application/json"`);
- `"x-dtype"` may name an Arrow dtype for a scalar (e.g. "float32", "int32"); the
  defaults are int64, float64, bool and string;
- a top-level string column with an `enum` is categorical: it is stored as a
  `datasets.ClassLabel` whose names are the enum's values in schema order (null stays
  null), so `load_dataset` users see the label set. histbench's own readers
  (`load_build_config`, `histbench validate`) turn the ids back into the names.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from jsonschema import Draft202012Validator

from .errors import SchemaError
from .progress import progress

MAX_REPORTED = 20

_SCALARS = {"string": "string", "integer": "int64", "number": "float64", "boolean": "bool"}


def _types(node: Mapping) -> list[str]:
    declared = node.get("type")
    if declared is None:
        return []
    return [declared] if isinstance(declared, str) else list(declared)


def check_schema_conventions(schema: Mapping, where: str) -> None:
    """Raise SchemaError when a schema cannot be turned into columns (see module doc)."""
    Draft202012Validator.check_schema(schema)
    _check_node(schema, where, "$", top=True)


def _check_node(node: Mapping, where: str, path: str, top: bool = False) -> None:
    types = [t for t in _types(node) if t != "null"]
    if len(types) != 1:
        raise SchemaError(f"{path}: declare exactly one non-null type, got {_types(node) or 'none'}", file=where)
    kind = types[0]
    if kind == "object":
        props = node.get("properties")
        if not isinstance(props, Mapping) or not props:
            raise SchemaError(f"{path}: objects need 'properties' (store free-form maps as JSON text)", file=where)
        if node.get("additionalProperties", True) is not False:
            raise SchemaError(f"{path}: objects need additionalProperties: false", file=where)
        missing = sorted(set(props) - set(node.get("required", [])))
        if missing:
            raise SchemaError(f"{path}: every property must be required (nullable instead): {missing}", file=where)
        for name, child in props.items():
            _check_node(child, where, f"{path}.{name}")
    elif kind == "array":
        if not isinstance(node.get("items"), Mapping):
            raise SchemaError(f"{path}: arrays need an 'items' schema", file=where)
        _check_node(node["items"], where, f"{path}[]")
    elif kind not in _SCALARS:
        raise SchemaError(f"{path}: unsupported type {kind!r}", file=where)


def class_label_names(schema: Mapping) -> dict[str, list[str]]:
    """Categorical columns of a config: top-level string properties with an `enum`.

    column -> label names in schema order (a null member of the enum is not a label).
    """
    labels = {}
    for name, node in schema["properties"].items():
        if "enum" in node and [t for t in _types(node) if t != "null"] == ["string"]:
            labels[name] = [value for value in node["enum"] if value is not None]
    return labels


def schema_to_features(schema: Mapping):
    """The `datasets.Features` a config's records are stored with."""
    from datasets import ClassLabel, Features

    labels = class_label_names(schema)
    return Features({
        name: ClassLabel(names=labels[name]) if name in labels else _feature(child)
        for name, child in schema["properties"].items()
    })


def records_to_table(records: list[dict], schema: Mapping, features=None):
    """Schema-checked records as the Arrow table they are stored as (`schema_to_features`):
    categorical columns go in as strings and come out as ClassLabel ids."""
    import pyarrow as pa

    features = features if features is not None else schema_to_features(schema)
    labels = class_label_names(schema)
    arrow = features.arrow_schema
    for name in labels:
        arrow = arrow.set(arrow.get_field_index(name), pa.field(name, pa.string()))
    table = encode_class_labels(pa.Table.from_pylist(records, schema=arrow), labels)
    return table.replace_schema_metadata(features.arrow_schema.metadata)


def encode_class_labels(table, labels: Mapping[str, list[str]]):
    """A pyarrow table whose categorical string columns become int64 ids (null stays null).

    The records were schema-checked first, so every non-null value is one of the names.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, names in labels.items():
        index = table.schema.get_field_index(name)
        ids = pc.index_in(table.column(name), value_set=pa.array(names, pa.string())).cast(pa.int64())
        table = table.set_column(index, pa.field(name, pa.int64()), ids)
    return table


def decode_class_labels(table, labels: Mapping[str, list[str]]):
    """The inverse of `encode_class_labels`: int ids back to their names (null stays null)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for name, names in labels.items():
        index = table.schema.get_field_index(name)
        if index < 0 or not pa.types.is_integer(table.schema.field(index).type):
            continue
        ids = table.column(name).combine_chunks()
        low, high = pc.min_max(ids).values()
        if low.is_valid and (low.as_py() < 0 or high.as_py() >= len(names)):
            raise SchemaError(
                f"column {name!r}: class label ids must lie in 0..{len(names) - 1} ({', '.join(names)}), "
                f"found {low.as_py()}..{high.as_py()}"
            )
        column = pa.array(names, pa.string()).take(ids)
        table = table.set_column(index, pa.field(name, pa.string()), column)
    return table


def _feature(node: Mapping):
    from datasets import List, Value

    kind = next(t for t in _types(node) if t != "null")
    if kind == "object":
        return {name: _feature(child) for name, child in node["properties"].items()}
    if kind == "array":
        return List(_feature(node["items"]))
    return Value(node.get("x-dtype", _SCALARS[kind]))


_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_native(value: Any) -> Any:
    """Turn numpy scalars and arrays (and tuples) into plain Python values, recursively."""
    if value.__class__ in _PLAIN:  # exact classes: numpy scalars subclass float/int
        return value
    # plain members are kept without a call: records are mostly plain already
    if isinstance(value, dict):
        return {k: v if v.__class__ in _PLAIN else to_native(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [v if v.__class__ in _PLAIN else to_native(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()  # already plain Python values, nested lists for 2-D and more
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def _json_path(error) -> str:
    path = "$"
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _non_finite(record: Any, path: str = "$") -> str | None:
    """JSON has no NaN or infinity; report where one hides (schemas cannot express it)."""
    if isinstance(record, float) and not math.isfinite(record):
        return path
    if isinstance(record, dict):
        for key, value in record.items():
            found = _non_finite(value, f"{path}.{key}")
            if found:
                return found
    if isinstance(record, list):
        for index, value in enumerate(record):
            found = _non_finite(value, f"{path}[{index}]")
            if found:
                return found
    return None


# Keywords the fast path understands; a schema using any other keyword is checked by
# jsonschema alone. Annotations (description, title, ...) do not constrain values.
_FAST_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "minItems", "maxItems", "minLength", "maxLength", "pattern",
    "description", "title", "$schema", "$id", "$comment", "x-dtype", "contentMediaType", "default", "examples",
}
# exact classes: a subclass (or 1.0 for an integer) just takes the jsonschema path
_FAST_CLASSES = {"string": (str,), "integer": (int,), "number": (float, int), "boolean": (bool,),
                 "array": (list,), "object": (dict,)}
_FAST_SCALARS = ("string", "integer", "number", "boolean")
# bound keyword -> (comparison, which end of an array it applies to)
_FAST_BOUNDS = (("minimum", ">=", "min"), ("maximum", "<=", "max"),
                ("exclusiveMinimum", ">", "min"), ("exclusiveMaximum", "<", "max"))


def _class_check(kind: str, var: str) -> str:
    """`var` is exactly one of the classes of `kind` (e.g. "(v.__class__ is float or v.__class__ is int)")."""
    tests = [f"{var}.__class__ is {cls.__name__}" for cls in _FAST_CLASSES[kind]]
    return tests[0] if len(tests) == 1 else f"({' or '.join(tests)})"


def compile_check(schema: Mapping, finite: bool = False):
    """A fast predicate for the schema subset the conventions use, or None.

    finite=True also rejects NaN and infinity in number fields (the writer's default).

    The schema is turned into one Python expression (compiled once). It never accepts a
    record that jsonschema would reject; it may reject some that jsonschema accepts
    (e.g. 1.0 for an integer, NaN against a minimum), and `validate_records` runs
    jsonschema on every record the predicate does not accept, so results and messages
    are unchanged. Schemas with keywords outside `_FAST_KEYWORDS`, or with more than
    one non-null type, give None (jsonschema checks every record).
    """
    import re

    names: dict[str, object] = {}
    counter = iter(range(1_000_000))

    def const(value) -> str:
        name = f"_c{next(counter)}"
        names[name] = value
        return name

    def fast_kind(node) -> tuple[str, bool] | None:
        """(the one non-null type, whether null is allowed) of a node the fast path handles, else None."""
        if not isinstance(node, Mapping) or set(node) - _FAST_KEYWORDS:
            return None
        types = _types(node)
        real = [t for t in types if t != "null"]
        if len(real) != 1 or real[0] not in _FAST_CLASSES:
            return None
        return real[0], "null" in types

    def scalar_items(node, var: str) -> str | None:
        """An array of plain scalars checked with C-level set and map calls instead of one
        generator step per element (the records' option lists and distributions): the classes
        of the elements, then an enum, or finiteness before bounds. None where the items
        need more (the per-element expression then checks them)."""
        found = fast_kind(node)
        if found is None or found[0] not in _FAST_SCALARS:
            return None
        kind, nullable = found
        bounds = [key for key, _, _ in _FAST_BOUNDS if key in node]
        if set(node) & {"minLength", "maxLength", "pattern"} or (bounds and kind not in ("number", "integer")):
            return None
        if "enum" in node and (kind != "string" or not all(isinstance(m, str) for m in node["enum"])):
            return None
        checks_numbers = (kind == "number" and finite) or bool(bounds)
        if nullable and (checks_numbers or "enum" in node):
            return None
        if bounds and kind == "number" and not finite:  # min()/max() would pass over a NaN
            return None
        classes = set(_FAST_CLASSES[kind]) | ({type(None)} if nullable else set())
        parts = [f"set(map(type, {var})) <= {const(frozenset(classes))}"]
        if "enum" in node:
            parts.append(f"set({var}) <= {const(frozenset(node['enum']))}")
        if kind == "number" and finite:
            parts.append(f"all(map(_isfinite, {var}))")
        for key, op, end in _FAST_BOUNDS:
            if key in node:
                parts.append(f"(not {var} or {end}({var}) {op} {const(node[key])})")
        return " and ".join(parts)

    def expr(node, var: str) -> str | None:
        found = fast_kind(node)
        if found is None:
            return None
        kind, nullable = found
        parts = [_class_check(kind, var)]
        if "enum" in node:
            if kind != "string" or not all(isinstance(m, str) for m in node["enum"]):
                return None
            parts.append(f"{var} in {const(frozenset(node['enum']))}")
        if finite and kind == "number":
            parts.append(f"_isfinite({var})")
        for key, op, _ in _FAST_BOUNDS:
            if key in node and kind in ("number", "integer"):
                parts.append(f"{var} {op} {const(node[key])}")
        if kind == "string":
            if "minLength" in node:
                parts.append(f"len({var}) >= {const(node['minLength'])}")
            if "maxLength" in node:
                parts.append(f"len({var}) <= {const(node['maxLength'])}")
            if "pattern" in node:
                parts.append(f"{const(re.compile(node['pattern']))}.search({var}) is not None")
        if kind == "array":
            if "minItems" in node:
                parts.append(f"len({var}) >= {const(node['minItems'])}")
            if "maxItems" in node:
                parts.append(f"len({var}) <= {const(node['maxItems'])}")
            if "items" in node:
                scalars = scalar_items(node["items"], var)
                if scalars is not None:
                    parts.append(scalars)
                else:
                    item_var = f"x{next(counter)}"
                    item = expr(node["items"], item_var)
                    if item is None:
                        return None
                    parts.append(f"all({item} for {item_var} in {var})")
        if kind == "object":
            extra = node.get("additionalProperties", True)
            if extra not in (True, False):
                return None
            props = node.get("properties") or {}
            required = set(node.get("required", ()))
            if required:
                parts.append(f"{const(frozenset(required))}.issubset({var})")
            if extra is False:
                parts.append(f"{const(frozenset(props))}.issuperset({var})")
            for name, child in props.items():
                child_expr = expr(child, f"{var}[{name!r}]")
                if child_expr is None:
                    return None
                parts.append(child_expr if name in required else f"({name!r} not in {var} or {child_expr})")
        body = " and ".join(parts)
        return f"({var} is None or ({body}))" if nullable else f"({body})"

    source = expr(schema, "v")
    if source is None:
        return None
    namespace = {**names, "_isfinite": math.isfinite}
    exec(f"def check(v):\n    return {source}\n", namespace)  # noqa: S102 - generated from the schema only
    return namespace["check"]


def validate_records(
    records: Iterable[Mapping],
    schema: Mapping,
    *,
    config: str,
    split: str | None = None,
    total: int | None = None,
    allow_non_finite: bool = False,
    make_native: bool = False,
) -> int:
    """Check every record; raise SchemaError listing the first 20 bad ones. Returns the count.

    Non-finite floats (NaN, inf) are rejected unless `allow_non_finite`: a benchmark that
    needs them says so, everyone else gets a clear error instead of a silent NaN.

    make_native: `records` is a list whose members are replaced by `to_native(record)`
    first, except those the fast path accepts (they hold only plain Python values already).
    """
    validator = Draft202012Validator(schema)
    fast = compile_check(schema, finite=not allow_non_finite)  # accepts valid records quickly; jsonschema judges the rest
    label = config if split is None else f"{config}/{split}"
    problems: list[str] = []
    bad = 0
    count = 0
    for index, record in enumerate(progress(records, desc=f"schema {label}", total=total, unit="rec")):
        count += 1
        accepted = fast is not None and record.__class__ is dict and fast(record)
        if make_native and not accepted:
            record = records[index] = to_native(record)
            accepted = fast is not None and record.__class__ is dict and fast(record)
        errors = [] if accepted else sorted(validator.iter_errors(record), key=lambda e: list(e.absolute_path))
        message = None
        if errors:
            first = errors[0]
            message = f"{_json_path(first)}: {first.message}"
            if len(errors) > 1:
                message += f" (+{len(errors) - 1} more)"
        elif not allow_non_finite and not accepted:  # the fast path already rejects NaN/inf
            where = _non_finite(record)
            if where:
                message = f"{where}: NaN or infinity is not allowed"
        if message:
            bad += 1
            if len(problems) < MAX_REPORTED:
                problems.append(f"config {label}, row {index}, {message}")
    if bad:
        shown = min(bad, MAX_REPORTED)
        raise SchemaError(
            f"{bad} of {count} records in config {label!r} do not match the schema "
            f"(first {shown} listed); nothing was written",
            details=problems,
        )
    return count
