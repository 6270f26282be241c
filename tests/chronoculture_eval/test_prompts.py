"""The prompts: B.1's system message word for word, F.3's alternative instructions, `--prompts FILE`."""

from __future__ import annotations

import json
import re

import pytest

from histbench import cli
from histbench.builders.chronoculture.prompts import PromptTemplates
from histbench.core.errors import SourceError
from histbench.core.resources import Resources

# Appendix B.1, paragraph "System prompt": the system message every model received, as the
# paper prints it (the text inside its quotation marks, punctuation included).
B1_SYSTEM = "You estimate survey response distributions. Return only valid JSON. Do not include explanations, markdown, or extra text."
SOURCES = Resources.default().source_dir("chronoculture")
F3_FILES = ("prompts_f3_national_survey.yaml", "prompts_f3_hundred_adults.yaml")


def test_system_message_is_b1_byte_for_byte():
    templates = PromptTemplates.load(SOURCES / "prompts.yaml")
    for messages in (templates.distribution("Canada", "Q?", ["Yes", "No"], 1999),
                     templates.distribution("Canada", "Q?", ["Yes", "No"], None),
                     templates.mcq("Canada", "Q?", ["Yes", "No"], 1999)):
        assert messages[0] == {"role": "system", "content": B1_SYSTEM}
        assert messages[0]["content"].encode("utf-8") == B1_SYSTEM.encode("utf-8")
        assert [m["role"] for m in messages] == ["system", "user"]


def test_user_prompt_content_follows_3_7_and_a4():
    """3.7: country, year, question and options, and the percentage choosing each option;
    A.4: the undated prompt is the dated one without the year; B.1: a JSON object."""
    templates = PromptTemplates.load(SOURCES / "prompts.yaml")
    options = ["Very important", "Rather important", "Not very important", "Not at all important"]
    dated = templates.distribution("Peru", "How important is family in your life?", options, 2012)[1]["content"]
    undated = templates.distribution("Peru", "How important is family in your life?", options, None)[1]["content"]
    for text in (dated, undated):
        assert "Peru" in text and "How important is family in your life?" in text and "percentage" in text
        assert all(f"- {o}" in text for o in options)
        assert json.dumps({o: 0 for o in options}).replace("0", "<percent>") in text
    assert "2012" in dated and not re.search(r"\b(19|20)\d\d\b", undated)


@pytest.mark.parametrize("text", ["In $year, $country: ${question}\n$options", "$$5 and $x$$", "", "plain text",
                                  "ends with $", "bad $1 placeholder", "${x}${x}$year", "{\"$x\": <percent>} }{ {{y}}",
                                  "{0} {x} {$x} {year!r:>9}"])
def test_templates_render_as_string_template_substitute(text):
    """The build renders each template from its text and placeholders split once; the result,
    and the error for an unknown or malformed placeholder, are string.Template.substitute's."""
    import string

    from histbench.builders.chronoculture.prompts import _Compiled

    for values in ({"year": 1999, "country": "Peru", "question": "Q?", "options": "- a", "x": "X"}, {"year": 2}):
        try:
            expected = string.Template(text).substitute(**values)
        except (KeyError, ValueError) as exc:
            expected = repr(exc)
        try:
            got = _Compiled(string.Template(text)).render(values)
        except (KeyError, ValueError) as exc:
            got = repr(exc)
        assert got == expected


@pytest.mark.parametrize("name", F3_FILES)
def test_f3_alternative_instructions_keep_question_options_and_b1_system(name):
    """F.3: the questions and options stay the same and within a pair only the year differs."""
    templates = PromptTemplates.load(SOURCES / name, sections=("distribution",))
    original = PromptTemplates.load(SOURCES / "prompts.yaml")
    options = ["Agree", "Neither", "Disagree"]
    old = templates.distribution("Chile", "Women should work.", options, 1994)
    new = templates.distribution("Chile", "Women should work.", options, 2012)
    assert old[0]["content"] == B1_SYSTEM
    assert new[1]["content"] == old[1]["content"].replace("1994", "2012")
    for text in (old[1]["content"], templates.distribution("Chile", "Women should work.", options, None)[1]["content"]):
        assert "Women should work." in text and all(f"- {o}" in text for o in options)
    # a different instruction: not the original wording
    assert old[1]["content"] != original.distribution("Chile", "Women should work.", options, 1994)[1]["content"]
    assert not templates.has("mcq")


def test_prompt_file_errors_name_the_field(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("distribution:\n  system: x\n  option_line: '- $label'\n  dated: '$year'\n", encoding="utf-8")
    with pytest.raises(SourceError, match="distribution.undated"):
        PromptTemplates.load(path, sections=("distribution",))
    path.write_text(path.read_text() + "  undated: u\nmcq:\n  system: s\n", encoding="utf-8")
    with pytest.raises(SourceError, match="mcq.option_line"):  # a section that is present must be complete
        PromptTemplates.load(path, sections=("distribution",))


def _uniform_answer(messages):
    """A model answering equal shares for the options listed in the prompt ("- label" lines)."""
    labels = re.findall(r"^- (.+)$", messages[-1]["content"], flags=re.MULTILINE)
    return json.dumps({label: 100 / len(labels) for label in labels})


def test_prompts_option_renders_the_build_prompts_again_and_is_signed(chat_server, sample_build, tmp_path, capsys):
    """`--prompts` with the shipped file sends exactly the build's messages (the run store answers
    them all from the first run), an F.3 file sends other messages, and each run's signature
    names its prompt file's sha256."""
    server = chat_server(_uniform_answer)
    base = ["eval", "chronoculture", "--model", server.spec(), "--model-option", "max_retries=0", "--dataset",
            str(sample_build), "--sample", "8", "--stratify", "shift_category"]
    run = tmp_path / "run"
    assert cli.main([*base, "--out", str(run)]) == 0
    asked = server.requests
    assert asked == 24
    assert cli.main([*base, "--out", str(run), "--prompts", str(SOURCES / "prompts.yaml")]) == 0
    assert server.requests == asked  # the same 24 requests: nothing asked again
    build_info = json.loads((run / "chronoculture.json").read_text())
    assert build_info["prompts"]["source"] == "file"
    shipped = PromptTemplates.load(SOURCES / "prompts.yaml")
    manifest = json.loads((sample_build / "histbench.json").read_text())
    assert build_info["prompt_templates_sha256"] == shipped.sha256 == \
        manifest["chronoculture_sources"]["prompt_templates"]["sha256"]

    alt = tmp_path / "alt"
    assert cli.main([*base, "--out", str(alt), "--prompts", str(SOURCES / F3_FILES[1])]) == 0
    assert server.requests == asked + 24
    bodies = server.bodies[-24:]
    assert all("100 adults" in b["messages"][1]["content"] for b in bodies)
    assert all(b["messages"][0]["content"] == B1_SYSTEM for b in bodies)
    info = json.loads((alt / "chronoculture.json").read_text())
    alt_sha = PromptTemplates.load(SOURCES / F3_FILES[1], sections=("distribution",)).sha256
    assert info["prompt_templates_sha256"] == alt_sha and f"prompt:{alt_sha[:12]}" in info["signature"]
    assert f"prompt:{alt_sha[:12]}" not in build_info["signature"]
    assert "sample:8/shift_category/seed0" in info["signature"]
    capsys.readouterr()


def test_prompts_option_errors(sample_build, tmp_path, capsys):
    args = ["eval", "chronoculture", "--baseline", "uniform", "--dataset", str(sample_build), "--out", str(tmp_path / "r")]
    assert cli.main([*args, "--prompts", str(SOURCES / "prompts.yaml")]) == 2
    assert "--prompts is for model runs" in capsys.readouterr().err


def test_report_compares_an_alternative_instruction_with_the_original_f3(chat_server, sample_build, tmp_path):
    """F.3: predictions under an alternative instruction against the same model's original ones
    (identical share and mean W). The scripted model answers uniform shares to the original prompts
    and puts everything on the first option under the '100 adults' instruction."""
    def answer(messages):
        labels = re.findall(r"^- (.+)$", messages[-1]["content"], flags=re.MULTILINE)
        if "100 adults" in messages[-1]["content"]:
            return json.dumps({label: 100 if j == 0 else 0 for j, label in enumerate(labels)})
        return json.dumps({label: 100 / len(labels) for label in labels})

    server = chat_server(answer)
    base = ["eval", "chronoculture", "--model", server.spec(), "--model-option", "max_retries=0", "--dataset",
            str(sample_build), "--sample", "8", "--stratify", "shift_category"]
    assert cli.main([*base, "--out", str(tmp_path / "orig")]) == 0
    assert cli.main([*base, "--out", str(tmp_path / "adults"), "--prompts", str(SOURCES / F3_FILES[1])]) == 0
    info = json.loads((tmp_path / "adults" / "chronoculture.json").read_text())
    assert info["label"] == "loopback-model [prompts_f3_hundred_adults]"
    report = tmp_path / "report"
    assert cli.main(["report", "chronoculture", str(tmp_path / "orig"), str(tmp_path / "adults"), "--out", str(report),
                     "--resamples", "0"]) == 0
    text = (report / "index.md").read_text()
    assert "F.3. Alternative instructions against the original" in text
    data = json.loads((report / "report.json").read_text())
    section = data["Robustness: repeated runs and prompt instructions (F.3)"]
    comparison = section["loopback-model [prompts_f3_hundred_adults]"]["instruction"]
    assert comparison["original"] == "loopback-model" and comparison["all"]["compared"] == 24
    assert comparison["all"]["identical"] == 0.0
    # uniform vs a point mass on the first of K ordered options: W = (K - 1) / 2 / (K - 1) = 0.5 on every scale
    assert comparison["all"]["mean_w"] == pytest.approx(0.5)


def test_same_label_with_other_prompts_is_not_a_repeated_run(chat_server, sample_build, tmp_path, capsys):
    server = chat_server(_uniform_answer)
    base = ["eval", "chronoculture", "--model", server.spec(), "--model-option", "max_retries=0", "--dataset",
            str(sample_build), "--sample", "4", "--stratify", "shift_category", "--label", "same"]
    assert cli.main([*base, "--out", str(tmp_path / "a")]) == 0
    assert cli.main([*base, "--out", str(tmp_path / "b"), "--prompts", str(SOURCES / F3_FILES[0])]) == 0
    capsys.readouterr()
    assert cli.main(["report", "chronoculture", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "r"),
                     "--resamples", "0"]) == 2
    assert "different prompts" in capsys.readouterr().err
