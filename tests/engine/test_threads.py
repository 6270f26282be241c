"""torch's threads from the CPUs this process may use and what other work leaves free
(issue 27: on a 2-core machine with two busy processes beside it, SmolLM2's threads spun
against them and a 4 s answer took 58 s). The timing beside busy processes is measured by
bench/served_likelihood.py, not here."""

from __future__ import annotations

import os

import pytest

from histbench.core import threads
from histbench.core.errors import EvalError


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_last", {})


@pytest.mark.parametrize(("usable", "busy", "chosen"), [(2, 0.0, 2), (2, 0.4, 2), (2, 0.6, 1), (2, 2.0, 1), (2, 5.0, 1),
                                                         (8, 3.2, 5), (8, 0.0, 8), (1, 0.0, 1)])
def test_auto_uses_the_cpus_other_work_leaves_free(monkeypatch, usable, busy, chosen):
    monkeypatch.setattr(threads, "usable_cpus", lambda: usable)
    got, why = threads.choose_threads("auto", measure=lambda n: busy)
    assert got == chosen and f"{usable} usable" in why


def test_a_number_wins_and_omp_num_threads_is_left_alone(monkeypatch):
    assert threads.choose_threads(3) == (3, "threads=3 (option)")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    got, why = threads.choose_threads("auto")
    assert got is None and "OMP_NUM_THREADS=4" in why
    for bad in (0, -1, "two", 1.5, True):
        with pytest.raises(EvalError, match="threads must be a positive integer or auto"):
            threads.choose_threads(bad)


def test_usable_cpus_follow_the_affinity_mask_and_a_cgroup_quota(monkeypatch, tmp_path):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5, 7}, raising=False)
    real_quota = threads.cgroup_quota
    monkeypatch.setattr(threads, "cgroup_quota", lambda: None)
    assert threads.usable_cpus() == 4
    monkeypatch.setattr(threads, "cgroup_quota", lambda: 1.5)
    assert threads.usable_cpus() == 2
    monkeypatch.setattr(threads, "cgroup_quota", real_quota)
    quota = tmp_path / "cpu.max"
    quota.write_text("150000 100000\n")
    assert threads.cgroup_quota(str(quota)) == 1.5
    quota.write_text("max 100000\n")
    assert threads.cgroup_quota(str(quota)) is None
    assert threads.cgroup_quota(str(tmp_path / "absent")) is None


def test_cpu_times_read_only_this_processs_cpus(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(
        "cpu  100 0 100 800 0 0 0 0 0 0\n"
        "cpu0 50 0 50 0 0 0 0 0 0 0\n"      # fully busy
        "cpu1 0 0 0 100 0 0 0 0 0 0\n"      # idle
        "cpu2 50 0 50 700 0 0 0 0 0 0\n"
        "intr 12345\n")
    assert threads._cpu_times({0}, str(stat)) == (100.0, 100.0)
    assert threads._cpu_times({0, 1}, str(stat)) == (100.0, 200.0)
    assert threads._cpu_times({9}, str(stat)) is None


def test_one_measurement_serves_models_loaded_one_after_another(monkeypatch):
    calls = []
    monkeypatch.setattr(threads, "busy_cpus", lambda usable: calls.append(usable) or 1.0)
    monkeypatch.setattr(threads, "usable_cpus", lambda: 4)
    assert threads.choose_threads()[0] == threads.choose_threads()[0] == 3
    assert len(calls) == 1


def test_the_hf_backend_sets_torchs_threads_when_its_model_loads(tiny_causal_lm):
    torch = pytest.importorskip("torch")
    from histbench.core.backends import load_backend

    before = torch.get_num_threads()
    try:
        backend = load_backend(f"hf:{tiny_causal_lm}", {"device": "cpu", "threads": 1})
        assert backend.threads_info is None  # nothing happens before the model loads
        backend.model  # noqa: B018
        assert torch.get_num_threads() == 1 and backend.threads_info == {"threads": 1, "why": "threads=1 (option)"}
        with pytest.raises(EvalError, match="threads"):
            load_backend(f"hf:{tiny_causal_lm}", {"threads": "many"})
    finally:
        torch.set_num_threads(before)


def test_a_long_run_measures_again_between_batches(monkeypatch):
    """The load of a shared machine changes during a run: Retuner.check() measures again
    once REUSE_SECONDS have passed, and only then."""
    torch = pytest.importorskip("torch")
    busy = iter([0.0, 2.0, 2.0])
    monkeypatch.setattr(threads, "usable_cpus", lambda: 2)
    monkeypatch.setattr(threads, "busy_cpus", lambda usable: next(busy))
    clock = [1000.0]
    monkeypatch.setattr(threads.time, "monotonic", lambda: clock[0])
    before = torch.get_num_threads()
    try:
        retuner = threads.Retuner("auto")
        assert retuner.check()["threads"] == 2
        clock[0] += 10
        assert retuner.check() is None and torch.get_num_threads() == 2  # not due yet
        clock[0] += threads.REUSE_SECONDS
        assert retuner.check()["threads"] == 1 and torch.get_num_threads() == 1  # the machine got busy
        fixed = threads.Retuner(2)
        assert fixed.check()["threads"] == 2
        clock[0] += 10 * threads.REUSE_SECONDS
        assert fixed.check() is None  # a number is applied once
    finally:
        torch.set_num_threads(before)


def test_run_json_records_the_threads_chosen_and_why(tiny_causal_lm, tmp_path):
    """Issue 45: run.json said `threads: auto`; it now records the number torch ran with and
    the reason, beside the option as given."""
    import json

    torch = pytest.importorskip("torch")
    from histbench.core.backends import LoglikelihoodRequest, load_backend
    from histbench.core.runstore import RunStore

    before = torch.get_num_threads()
    try:
        backend = load_backend(f"hf:{tiny_causal_lm}", {"device": "cpu", "threads": 1})
        assert "threads" not in backend.identity()   # nothing chosen before the model loads
        RunStore.open(tmp_path / "run", backend=backend).run([LoglikelihoodRequest(context="a b", continuation=" c")])
        info = json.loads((tmp_path / "run" / "run.json").read_text(encoding="utf-8"))
        assert info["backend"]["threads"] == {"chosen": 1, "why": "threads=1 (option)"}
        assert info["backend"]["options"]["threads"] == 1
    finally:
        torch.set_num_threads(before)
