"""Random damage to real input files never crashes a reader (issue 17, point 8).

Hypothesis takes a valid file (a bundled sample, or one histbench writes) and damages it the
way files get damaged: cut at any byte, bytes flipped, inserted or deleted, lines duplicated,
dropped or swapped, separators, quotes, brackets, NUL bytes and byte-order marks dropped in.
Whatever comes out, a reader either reads it or raises one of histbench's own errors
(`HistbenchError`, which the command line prints as one line); any other exception is a
crash. Examples are derandomized, so a run is reproducible and a failure names its input.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.core.errors import HistbenchError

from .conftest import SOURCES

SPECIAL = [b"\n", b"\r\n", b",", b"\t", b'"', b"'", b"{", b"}", b"[", b"]", b":", b"\x00", b"\xef\xbb\xbf", b"\xff\xfe",
           b"\\", b"NaN", b"-", b"1e400", b"<", b">", b"&", b"#", b"=", b"|", b"\xc3", b"\x80"]

_op = st.one_of(
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.just("flip"), st.floats(0, 1), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.floats(0, 1), st.sampled_from(SPECIAL)),
    st.tuples(st.just("delete"), st.floats(0, 1), st.integers(1, 40)),
    st.tuples(st.just("dup_line"), st.floats(0, 1)),
    st.tuples(st.just("drop_line"), st.floats(0, 1)),
    st.tuples(st.just("swap_lines"), st.floats(0, 1), st.floats(0, 1)),
)
DAMAGE = st.lists(_op, min_size=1, max_size=6)


def damage(data: bytes, ops) -> bytes:
    for op in ops:
        kind, where = op[0], op[1]
        at = int(where * len(data))
        if kind == "cut":
            data = data[:at]
        elif kind == "flip" and data:
            at = min(at, len(data) - 1)
            data = data[:at] + bytes([op[2]]) + data[at + 1:]
        elif kind == "insert":
            data = data[:at] + op[2] + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + op[2]:]
        else:
            lines = data.split(b"\n")
            i = min(int(where * len(lines)), len(lines) - 1)
            if kind == "dup_line":
                lines.insert(i, lines[i])
            elif kind == "drop_line" and len(lines) > 1:
                lines.pop(i)
            elif kind == "swap_lines":
                j = min(int(op[2] * len(lines)), len(lines) - 1)
                lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
    return data


def fuzz(max_examples: int):
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _survives(read, path: Path) -> None:
    try:
        read(path)
    except HistbenchError as error:
        assert "\n" not in error.headline(), error.headline()


@pytest.fixture(scope="module")
def workdir():
    folder = Path(tempfile.mkdtemp(prefix="histbench-damage-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- core readers

RELEASE = SOURCES / "chronologic" / "sample" / "chronologic_sample.jsonl"
RELEASE_BYTES = b"\n".join(RELEASE.read_bytes().split(b"\n")[:4]) + b"\n"


@fuzz(300)
@given(ops=DAMAGE)
def test_json_lines_and_json_readers(workdir, ops):
    from histbench.core.readers import iter_jsonl_objects, read_json_object

    path = workdir / "x.jsonl"
    path.write_bytes(damage(RELEASE_BYTES, ops))
    _survives(lambda p: list(iter_jsonl_objects(p)), path)
    path.write_bytes(damage(json.dumps({"backend": {"spec": "api:m"}, "sessions": [1, 2]}).encode(), ops))
    _survives(read_json_object, path)


# --------------------------------------------------------------------------- chronologic release


def _release_table(sep: str) -> bytes:
    import pandas as pd

    rows = [json.loads(line) for line in RELEASE_BYTES.decode().splitlines()]
    rows = [{k: json.dumps(v) if isinstance(v, list) else v for k, v in r.items()} for r in rows]
    return pd.DataFrame(rows).to_csv(sep=sep, index=False).encode()


@pytest.mark.parametrize(("suffix", "data"), [
    ("jsonl", RELEASE_BYTES),
    ("json", json.dumps([json.loads(line) for line in RELEASE_BYTES.decode().splitlines()]).encode()),
    ("csv", _release_table(",")),
    ("tsv", _release_table("\t")),
])
def test_chronologic_release_reader(workdir, suffix, data):
    from histbench.builders.chronologic.release import load_release

    @fuzz(120)
    @given(ops=DAMAGE)
    def check(ops):
        path = workdir / f"release.{suffix}"
        path.write_bytes(damage(data, ops))
        _survives(load_release, path)

    check()


# --------------------------------------------------------------------------- valence

VALENCE = SOURCES / "valence" / "sample"


@pytest.mark.parametrize("suffix", ["csv", "tsv", "jsonl"])
def test_valence_sentence_and_annotation_readers(workdir, suffix):
    import csv
    import io

    from histbench.builders.valence.annotations import read_annotations
    from histbench.builders.valence.scale import Scale
    from histbench.builders.valence.sentences import GroupSet, read_sentences

    with (VALENCE / "sentences.csv").open(encoding="utf-8", newline="") as handle:
        sentences = list(csv.DictReader(handle))[:6]
    with (VALENCE / "annotations.csv").open(encoding="utf-8", newline="") as handle:
        annotations = list(csv.DictReader(handle))[:12]

    def encode(rows: list[dict]) -> bytes:
        if suffix == "jsonl":
            return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), delimiter="\t" if suffix == "tsv" else ",")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue().encode()

    known = {"eme01": "Why dost [MASK] tarry so long at the gate?"}

    @fuzz(100)
    @given(ops=DAMAGE, which=st.sampled_from(["sentences", "annotations"]))
    def check(ops, which):
        path = workdir / f"{which}.{suffix}"
        if which == "sentences":
            path.write_bytes(damage(encode(sentences), ops))
            _survives(lambda p: read_sentences(p, scale=Scale(), groups=GroupSet(None)), path)
        else:
            path.write_bytes(damage(encode(annotations), ops))
            _survives(lambda p: read_annotations(p, scale=Scale(), sentences=known, allow_blank=True), path)

    check()


# --------------------------------------------------------------------------- the run store


def test_run_store_records_and_run_json(workdir, chat_server):
    from histbench.core.backends import GenerateRequest, load_backend
    from histbench.core.runstore import RECORDS_NAME, RUN_NAME, RunStore

    server = chat_server()
    backend = load_backend(server.spec(), {"max_retries": 0})
    source = workdir / "good-run"
    requests = [GenerateRequest(prompt=f"p{i}", max_new_tokens=4) for i in range(4)]
    RunStore.open(source, backend=backend).run(requests)
    records, run_json = (source / RECORDS_NAME).read_bytes(), (source / RUN_NAME).read_bytes()

    @fuzz(150)
    @given(ops=DAMAGE, which=st.sampled_from([RECORDS_NAME, RUN_NAME]))
    def check(ops, which):
        run = workdir / "damaged-run"
        shutil.rmtree(run, ignore_errors=True)
        run.mkdir()
        (run / RECORDS_NAME).write_bytes(damage(records, ops) if which == RECORDS_NAME else records)
        (run / RUN_NAME).write_bytes(damage(run_json, ops) if which == RUN_NAME else run_json)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")   # a torn last line is a warning, by design
            # open, then resume: stored answers are parsed again, missing ones asked
            _survives(lambda p: RunStore.open(p, backend=backend).run(requests, parse=lambda r: len(r.text)), run)

    check()


# --------------------------------------------------------------------------- readers of the other benchmarks
# (their branches own these readers; a crash found here is reported to them)

ITALIAN = SOURCES / "italian" / "sample"


def _italian_conllu(path: Path):
    from histbench.builders.italian.syntax import read_conllu

    return read_conllu(path.parent)


def _italian_book(path: Path):
    from histbench.builders.italian.bibit import read_book

    return read_book(path)


def _italian_graph(path: Path):
    from histbench.builders.italian.intertext import load_citations

    return load_citations(path, SOURCES / "italian" / "dantesources.rq")


def _mher_registry(path: Path):
    from histbench.builders.mher.registry import read_registry

    return read_registry(path.parent)


def _cc_registry(path: Path):
    from histbench.builders.chronoculture.registry import load_registry

    return load_registry(path)


def _cc_countries(path: Path):
    from histbench.builders.chronoculture.countries import CountryTable

    return CountryTable.load(path)


def _cc_survey(path: Path):
    from histbench.builders.chronoculture.readers import read_columns, read_meta

    meta = read_meta(path)
    return read_columns(meta, list(meta.columns)[:4])


OTHER_READERS = [
    pytest.param("italian.conllu", ITALIAN / "cavalcanti" / "sample_sonetto.conllu", _italian_conllu, None,
                 id="italian-conllu"),
    pytest.param("book", ITALIAN / "bibit" / "sample_bibit001", _italian_book, None, id="italian-tei-p4"),
    pytest.param("dantesources.ttl", ITALIAN / "dantesources.ttl", _italian_graph, None, id="italian-turtle"),
    pytest.param("persons.csv", SOURCES / "mher" / "sample" / "persons.csv", _mher_registry, SOURCES / "mher" / "sample",
                 id="mher-registry"),
    pytest.param("registry.yaml", SOURCES / "chronoculture" / "registry.yaml", _cc_registry, None,
                 id="chronoculture-registry"),
    pytest.param("countries.csv", SOURCES / "chronoculture" / "countries.csv", _cc_countries, None,
                 id="chronoculture-countries"),
    pytest.param("wvs.sav", SOURCES / "chronoculture" / "sample" / "wvs_timeseries_synthetic.sav", _cc_survey, None,
                 id="chronoculture-sav"),
]


@pytest.mark.parametrize(("name", "source", "read", "folder"), OTHER_READERS)
def test_readers_of_the_other_benchmarks(workdir, name, source, read, folder):
    data = source.read_bytes()

    @fuzz(60)
    @given(ops=DAMAGE)
    def check(ops):
        target = workdir / "other" / name.replace("/", "_")
        shutil.rmtree(target.parent, ignore_errors=True)
        if folder is not None:
            shutil.copytree(folder, target.parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(damage(data, ops))
        _survives(read, target)

    check()
