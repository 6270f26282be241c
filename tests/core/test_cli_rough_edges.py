"""Issue 44's command-line rough edges, one test each: --help in sections, "did you mean"
for benchmarks, options and model kinds, errors that begin with what is wrong, options that
contradict each other refused, and a host that cannot be reached said at the first retry."""

from __future__ import annotations

import re

import pytest

from histbench import cli
from histbench.core.errors import HistbenchError, UsageError


def _help(capsys, *words: str) -> str:
    with pytest.raises(SystemExit) as caught:
        cli.main([*words, "--help"])
    assert caught.value.code == 0
    return capsys.readouterr().out


def _sections(text: str) -> dict[str, list[str]]:
    """{section heading: the long options listed under it} of an argparse --help."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            current = line[:-1]
            sections[current] = []
        elif current is not None:
            found = re.match(r"^  (?:-\w, )?(--[\w-]+)", line)
            if found:
                sections[current].append(found.group(1))
    return sections


def test_eval_help_groups_the_options_in_sections(capsys):
    sections = _sections(_help(capsys, "eval", "chronoculture"))
    names = [s.split(":")[0].split(" (")[0] for s in sections]
    assert names == ["options", "inputs", "model", "decoding", "output"], names
    by_name = dict(zip(names, sections.values(), strict=True))
    assert by_name["options"] == ["--help"]   # nothing else left in argparse's one list
    assert {"--dataset", "--limit", "--sample"} <= set(by_name["inputs"])
    assert {"--model", "--model-option", "--baseline", "--mode"} <= set(by_name["model"])
    assert by_name["decoding"] == ["--temperature", "--top-p", "--max-new-tokens", "--seed"]
    assert set(by_name["output"]) == {"--out", "--label"}
    # Chronologic's options of one --mode keep their own section; what no section names is "advanced"
    chronologic = _sections(_help(capsys, "eval", "chronologic"))
    assert "--mode judge" in chronologic and "--judge" in chronologic["--mode judge"]
    assert list(chronologic)[-1] == "advanced" and "--permute-frames" in chronologic["advanced"]
    assert chronologic["options"] == ["--help"]


@pytest.mark.parametrize("argv, hint", [
    (["eval", "chronologc"], "did you mean 'chronologic'?"),
    (["report", "chronocultre", "runs/x"], "did you mean 'chronoculture'?"),
    (["eval", "chronoculture", "--mode", "option-probability"], "did you mean 'option-probabilities'?"),
    (["build", "chronoculture", "--sampel"], "--sampel: did you mean '--sample'?"),
    (["eval", "chronoculture", "--basline", "uniform"], "--basline: did you mean '--baseline'?"),
    (["demo", "--only", "valance"], "did you mean 'valence'?"),
])
def test_a_misspelt_name_gets_did_you_mean(argv, hint, capsys, tmp_path):
    assert cli.main([*argv, *(["--out", str(tmp_path / "o")] if argv[0] == "demo" else [])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and hint in err, err
    assert not (tmp_path / "o").exists()


def test_a_misspelt_model_kind_and_keyword_get_did_you_mean():
    from histbench.core.backends.spec import load_backend, split_spec
    from histbench.options import eval_options

    with pytest.raises(UsageError, match=r"unknown backend 'hff' \(did you mean 'hf'\?\)"):
        split_spec("hff:gpt2")
    with pytest.raises(UsageError, match=r"unknown offline model 'smolm2' \(did you mean 'smollm2'\?\)"):
        load_backend("offline:smolm2")
    with pytest.raises(UsageError, match=r"no option 'basline' \(did you mean 'baseline'\?\)"):
        eval_options("chronoculture").resolve({"basline": "uniform"})
    with pytest.raises(UsageError, match=r"unknown backend 'zzz' in model spec") as caught:
        split_spec("zzz:gpt2")   # nothing close: no guess
    assert "did you mean" not in str(caught.value)


def test_an_error_begins_with_what_is_wrong_not_the_option():
    error = UsageError("unknown backend 'hff' in model spec 'hff:x'", field="--model")
    assert str(error) == "unknown backend 'hff' in model spec 'hff:x' (option --model)"
    # a message that names its option already is not told it twice (--model-option is not --model)
    assert str(UsageError("give exactly one of --model SPEC or --baseline NAME", field="--model")) == (
        "give exactly one of --model SPEC or --baseline NAME")
    assert str(UsageError("--model-option x is not KEY=VALUE", field="--model")).endswith("(option --model)")
    # a file, a row or a field of a file still come first: they say where
    assert str(HistbenchError("expected a number", file="a.csv", row=3, field="score")) == (
        "a.csv, row 3, field 'score': expected a number")


def test_the_cli_error_line_begins_with_what_is_wrong(capsys, tmp_path):
    assert cli.main(["eval", "chronoculture", "--dataset", str(tmp_path), "--model", "hff:x",
                     "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert not err.startswith("histbench: error: field") and "field '--" not in err


def test_model_options_beside_a_baseline_are_refused(capsys, tmp_path):
    for extra in (["--model-option", "dtype=float32"], ["--batch-size", "4"], ["--threads", "2"]):
        code = cli.main(["eval", "chronoculture", "--dataset", str(tmp_path), "--baseline", "uniform", *extra,
                         "--out", str(tmp_path / "run")])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1
        assert f"{extra[0]} configures a model, and --baseline asks none" in err, err
    assert not (tmp_path / "run").exists()


def test_an_unresolvable_host_is_said_at_the_first_retry(capsys):
    """Issue 44: an `api:` host that does not resolve was said only after six retries over 30 s;
    the first retry says what is wrong and how to stop at once."""
    from histbench.core.backends import GenerateRequest, load_backend

    backend = load_backend("api:m@http://no-such-host.invalid/v1", {"max_retries": 1, "backoff_base": 0.001})
    try:
        with pytest.raises(HistbenchError):
            backend.generate([GenerateRequest(messages=[{"role": "user", "content": "hi"}], max_new_tokens=4)])
    finally:
        backend.close()
    lines = [line for line in capsys.readouterr().err.splitlines() if "retrying" in line]
    assert lines and "retrying (1/1) after the host name could not be resolved" in lines[0]
    assert "check the host and port in the --model URL" in lines[0] and "max_retries=0" in lines[0]
