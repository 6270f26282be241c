"""A run folder is shared between colleagues: a file in it that is a symbolic link leading
out of it (records.jsonl, run.json, the lock) is refused, never truncated, appended to or
replaced (issue 39, class 3). Hypothesis picks the file and the way out (a direct link, a
chain of links, a link through a linked parent) and whether the outside file ends in a torn
line (which the store would otherwise cut off)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histbench.core.backends import GenerateRequest, load_backend
from histbench.core.errors import EvalError
from histbench.core.runstore import LOCK_NAME, RECORDS_NAME, RUN_NAME, RunStore

FAST = {"backoff_base": 0.01, "backoff_max": 0.05, "timeout": 5}
OUTSIDE = b'{"a person\'s file": "kept as it is"}\n{"torn'


def _requests(n: int) -> list[GenerateRequest]:
    return [GenerateRequest(messages=[{"role": "user", "content": f"q{i}"}], max_new_tokens=20) for i in range(n)]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from([RECORDS_NAME, RUN_NAME, LOCK_NAME]), how=st.sampled_from(["direct", "chain", "relative"]),
       torn=st.booleans())
def test_a_run_folder_file_linked_outside_is_refused_and_left_alone(chat_server, tmp_path_factory, name, how, torn):
    tmp = tmp_path_factory.mktemp("run")
    run, outside = tmp / "run", tmp / "outside.txt"
    run.mkdir()
    data = OUTSIDE if torn else OUTSIDE.rsplit(b"\n", 1)[0] + b"\n"
    outside.write_bytes(data)
    if how == "direct":
        os.symlink(outside, run / name)
    elif how == "chain":
        os.symlink(tmp / "hop", run / name)
        os.symlink(outside, tmp / "hop")
    else:
        os.symlink(f"../{outside.name}", run / name)
    backend = load_backend(chat_server().spec(), FAST)
    with pytest.raises(EvalError) as caught:
        RunStore.open(run, backend=backend).run(_requests(1))
    assert name in str(caught.value) and "leads outside the folder" in str(caught.value)
    assert outside.read_bytes() == data            # not truncated, not appended to, not replaced
    assert (run / name).is_symlink()


def test_links_that_stay_inside_the_run_folder_are_used(chat_server, tmp_path):
    run = tmp_path / "run"
    (run / "kept").mkdir(parents=True)
    (run / "kept" / "records.jsonl").write_text("")
    os.symlink("kept/records.jsonl", run / RECORDS_NAME)
    backend = load_backend(chat_server().spec(), FAST)
    records = RunStore.open(run, backend=backend).run(_requests(2))
    assert len(records) == 2 and len((run / "kept" / "records.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize("command", ["view", "report"])
def test_a_run_folder_with_a_link_out_is_not_read_into_a_page(tmp_path, capsys, command):
    """`view` and `report` read shared run folders: a file of the run that is a link leading
    out of it (here its predictions) is refused in one line, and no page is written."""
    import shutil

    from histbench.cli import main

    from ..reliability.test_malformed_inputs import _valence_run

    run = _valence_run(tmp_path)
    outside = tmp_path / "outside.parquet"
    shutil.move(run / "predictions.parquet", outside)
    os.symlink(outside, run / "predictions.parquet")
    capsys.readouterr()
    argv = ["view", str(run)] if command == "view" else ["report", "valence", str(run), "--out", str(tmp_path / "rep")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "predictions.parquet" in err[0] and "leads outside the folder" in err[0], err
    assert not (run / "viewer").exists() and not (tmp_path / "rep").exists()
