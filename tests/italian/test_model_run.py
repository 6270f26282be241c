"""A model run through the evaluator engine (loopback chat server) and the chat-backed WSD build steps."""

import json
import math

from histbench.core.backends import load_backend
from histbench.core.dataset import BuiltDataset
from histbench.eval.italian.run import evaluate

from .conftest import SAMPLE, build, rows


def _answer(messages):
    user = messages[-1]["content"]
    if '"entities"' in user:
        return 'Ecco: ```json\n{"entities": [{"text": "Faenza", "type": "LOC"}, {"text": "Marozzi", "type": "PER"}]}\n```'
    if '"order"' in user:
        return '{"order": ["A", "B", "C", "D"]}'
    return '{"answer": "A"}'


def test_model_run_is_scored_and_resumes_without_asking_again(sample_build, chat_server, tmp_path):
    server = chat_server(_answer)
    backend = load_backend(server.spec(), {"max_concurrency": 2})
    built = BuiltDataset.open(sample_build)
    out = tmp_path / "run"
    results = evaluate(built, out, backend=backend, tasks=["wsd", "ner_classense", "chrono_ranking", "intertext"])
    asked = server.requests
    wsd = rows(sample_build, "wsd")
    assert results["tasks"]["wsd"]["accuracy"] == sum(r["gold_index"] == 0 for r in wsd) / len(wsd)
    inter = rows(sample_build, "intertext")
    assert results["tasks"]["intertext"]["accuracy"] == sum(r["gold"] == "A" for r in inter) / len(inter)
    assert results["tasks"]["ner_classense"]["parse_failures"] == 0
    assert (out / "records.jsonl").is_file() and results["signature"]["text"].startswith("histbench:")
    again = evaluate(built, out, backend=load_backend(server.spec(), {}), tasks=["wsd", "ner_classense", "chrono_ranking", "intertext"])
    assert server.requests == asked and again["tasks"] == results["tasks"]


def _builder_answer(messages):
    user = messages[-1]["content"]
    if '"suitable"' in user:
        return '{"suitable": true, "reason": "gloss"}'
    if '"distractors"' in user:
        return json.dumps({"distractors": ["senso figurato di gioco", "luogo di ritrovo", "antico strumento",
                                           "modo di camminare", "tipo di tessuto"]})
    phrase = user.split("«", 1)[1].split("»", 1)[0]
    return json.dumps({"answer": f"significato sintetico di {phrase}"})


def test_wsd_build_with_chat_model_and_cache(chat_server, tmp_path):
    server = chat_server(_builder_answer)
    given = {"leggomanzoni": str(SAMPLE / "leggomanzoni")}
    # the fake model's five distractors are the same for every question: the audit would refuse them
    # without the offline lexicon (--wsd-lexicon none): every distractor is the chat model's
    out = build(tmp_path, given, chat_model=server.spec(), wsd_questions=0, allow_shortcuts=True, wsd_lexicon="none")
    wsd = rows(out, "wsd")
    assert wsd and all(r["screening_method"].startswith("chat:") and r["synthesis_method"].startswith("chat:") for r in wsd)
    assert all(r["answer"].startswith("significato sintetico di") for r in wsd)
    assert all(s in ("gold", "chat model") for r in wsd for s in r["candidate_sources"])
    asked = server.requests
    build(tmp_path, given, chat_model=server.spec(), wsd_questions=0, allow_shortcuts=True, wsd_lexicon="none")
    assert server.requests == asked          # answered from the chat cache


def test_cut_off_answers_are_failures_and_long_letters_get_a_larger_budget(chat_server, tmp_path):
    from .test_inputs import _letter_tree

    folder = tmp_path / "letters"
    folder.mkdir()
    long_text = "Ricevo da Faenza la nota. " + "Del resto non ho altro da scrivere a Vostra Paternità. " * 110
    _letter_tree(long_text).write(str(folder / "LONG.xml"), encoding="utf-8", xml_declaration=True)
    _letter_tree().write(str(folder / "SHORT.xml"), encoding="utf-8", xml_declaration=True)
    built = BuiltDataset.open(build(tmp_path, {"classense": str(folder)}, classense_subset=0))
    bodies = []

    def answer(messages):
        complete = '{"entities": [{"text": "Faenza", "type": "LOC"}]}'
        if "Del resto" in messages[-1]["content"]:
            return {"content": complete, "finish_reason": "length"}       # what a provider says when the budget ran out
        return complete

    server = chat_server(answer)
    server.fault_for = lambda n, body: bodies.append(body) and None
    results = evaluate(built, tmp_path / "run", backend=load_backend(server.spec(), {}), tasks=["ner_classense"])
    m = results["tasks"]["ner_classense"]
    assert m["cut_off"] == 1 and m["parse_failures"] == 0
    assert m["strict"]["per_type"]["LOC"]["tp"] == 1               # only the short letter's Faenza counts
    items = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "run" / "italian-items" / "ner_classense.jsonl").open()}
    assert items["LONG"]["failure"] == "cut off (finish_reason length)" and items["LONG"]["predicted"] == []
    budgets = sorted(b["max_tokens"] for b in bodies)
    n_chars = max(len(r["text"]) for r in rows(built.path, "ner_classense"))
    assert budgets == [1500, math.ceil(0.5 * n_chars)] and budgets[1] > 1500


def test_chat_distractors_only_where_wiktionary_falls_short(chat_server, tmp_path):
    from .fixtures import kaikki_entry

    # three senses repeat the commentators' glosses ("pendio tra il monte e la riva", "tratto in pendio fra i
    # monti"): they are the sense in context and are never offered; the other five are
    glosses = ["tratto di costa marina", "fianco di un monte", "regione affacciata sul mare", "striscia di terreno coltivato",
               "linea di alture parallela a un fiume", "pendio boscoso", "territorio amministrato da una città costiera",
               "squadra di navi di guardia"]
    path = tmp_path / "it.jsonl"
    path.write_text(kaikki_entry("costiera", "noun", glosses) + "\n", encoding="utf-8")
    asked = []

    def answer(messages):
        if '"distractors"' in messages[-1]["content"]:
            asked.append(messages[-1]["content"].split("«", 1)[1].split("»", 1)[0])
        return _builder_answer(messages)

    server = chat_server(answer)
    out = build(tmp_path, {"leggomanzoni": str(SAMPLE / "leggomanzoni"), "wiktionary": str(path)},
                chat_model=server.spec(), wsd_questions=0, allow_shortcuts=True, wsd_lexicon="none")
    costiera = next(r for r in rows(out, "wsd") if r["target_phrase"] == "costiera")
    assert all(s in ("gold",) or s.startswith("wiktionary: costiera") for s in costiera["candidate_sources"])
    offered = {c.lower() for c in costiera["candidates"]}
    assert offered.isdisjoint({"tratto di costa marina", "fianco di un monte", "pendio boscoso"})
    assert "costiera" not in asked and len(asked) == len(rows(out, "wsd")) - 1
