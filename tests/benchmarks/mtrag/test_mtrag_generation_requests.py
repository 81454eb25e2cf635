"""mtRAG generation requests (docs/protocols.md 3): the Appendix D.2 prompt and the judges' Figures 6 and 8
word for word, then the rounds (generate, judge, verdicts) with hand-made answers, failures counted as
outcomes.

Real data, bundled: data/mtrag/generation and tests/data/mtrag_figures_6_8.txt (the paper's Figures 6 and 8)."""
import math
from collections import Counter

import pytest
from bundled_data import REPO
from mtrag_tasks import D2, OPTS, REFERENCE, SAMPLE, answer, g, item_of, opts, task
from omegaconf import OmegaConf
from rouge_score import rouge_scorer

from benchmarks.mtrag.generation.options import prompts as prompts_in_force
from benchmarks.mtrag.generation.passages import selected
from jobs.flow.reducers import aggregate


@pytest.fixture(scope="module")
def reference_items():
    return list(g.load_items(REFERENCE))


# ---- prompts


def test_generation_request_is_d2_with_passages_then_the_turns(tmp_path):
    item = item_of(tmp_path, task())
    (request,) = g.expand(item, "generative", OPTS)
    assert {k: request[k] for k in ("request_id", "item_id", "subset", "variant", "route", "max_tokens")} == {
        "request_id": "mtrag_generation/c1<::>2#generation", "item_id": "mtrag_generation/c1<::>2",
        "subset": "ANSWERABLE", "variant": "generation", "route": "self", "max_tokens": 512}
    assert request["messages"] == [
        {"role": "system", "content": f"{D2}\n\nPASSAGE 1\nParis is the capital of France.\n\nPASSAGE 2\n"
                                      "France is in Europe."},
        {"role": "user", "content": "Tell me about France."},
        {"role": "assistant", "content": "France is a country."},
        {"role": "user", "content": "What is its capital?"}]
    (user_role,) = g.expand(item, "generative", opts({"prompt_role": "user"}))
    assert user_role["messages"][0] == {"role": "user", "content": f"{D2}\n\nPASSAGE 1\nParis is the capital of "
                                                                   "France.\n\nPASSAGE 2\nFrance is in Europe.\n\n"
                                                                   "Tell me about France."}
    unanswerable = item_of(tmp_path, task(tid="c2<::>2", answerability="UNANSWERABLE", contexts=[]), "u.jsonl")
    assert g.expand(unanswerable, "generative", OPTS)[0]["messages"][0] == {"role": "system", "content": D2}


def test_rb_llm_prompt_is_figure_6_word_for_word_and_idk_prompt_is_figure_8():
    seed = (REPO / "tests" / "data" / "mtrag_figures_6_8.txt").read_text(encoding="utf-8")

    def words(text):
        return " ".join(text.replace("’", "'").replace("“", '"').replace("”", '"').split())

    figure6 = seed[seed.index("[Instruction] Please act"):seed.index("[The End of Document]") + 21]
    prompts = prompts_in_force(OPTS)
    assert words(prompts["rb_llm"]) == words(figure6)
    figure8 = seed[seed.index("Read an inquiry and a response"):seed.index("[Additional ICL examples]")]
    instruction, _, sql_example = words(figure8).partition(" [Inquiry] ")
    assert words(prompts["idk"]).startswith(instruction + " [Inquiry] ")
    assert "[Inquiry] " + sql_example in words(prompts["idk"])
    assert words(prompts["idk"]).endswith("[Inquiry] {inquiry} [Response] {response} [Output]")
    assert words(prompts["idk"]) == words(figure8) + " [Inquiry] {inquiry} [Response] {response} [Output]"


def test_judge_prompts_on_a_real_task():
    item = list(g.load_items(SAMPLE))[1]
    rb_llm, idk, statements = g.expand(item, "generative", opts({"responses": "given"}))
    text = rb_llm["messages"][0]["content"]
    assert rb_llm["messages"][0]["role"] == "user" and len(rb_llm["messages"]) == 1
    assert text.startswith("[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response")
    assert ("[The Start of Previous Conversation]\nuser: where do the arizona cardinals play this week\nagent: I'm "
            "sorry, but I don't have the answer to your question.\n[The End of Previous Conversation]\n\n"
            "[The Start of Current Turn Question]\nDo the Arizona Cardinals play outside the US?\n"
            "[The End of Current Turn Question]\n\n[The Start of Reference Answer]\nThe Arizona Cardinals do play "
            "outside the United States.") in text
    assert f"[The Start of Assistant's Answer]\n{item['prediction'].strip()}\n[The End of Assistant's Answer]" in text
    assert text.endswith("\n\n".join(p["text"] for p in item["passages"]) + "\n[The End of Document]\n")
    assert idk["messages"][0]["content"].endswith(
        "[Inquiry]\nuser: where do the arizona cardinals play this week\nagent: I'm sorry, but I don't have the "
        "answer to your question.\nuser: Do the Arizona Cardinals play outside the US?\n\n[Response]\n"
        f"{item['prediction'].strip()}\n\n[Output]\n")
    assert statements["messages"][0]["content"].endswith(
        "[Question]\nuser: where do the arizona cardinals play this week\nagent: I'm sorry, but I don't have the "
        "answer to your question.\nuser: Do the Arizona Cardinals play outside the US?\n\n[Answer]\n"
        f"{item['prediction'].strip()}\n\n[Output]\n")


# ---- rounds


def test_rounds_generate_then_judge_then_verdicts(tmp_path):
    item = item_of(tmp_path, task())
    options = opts({"judges": {"rb_llm": ["judge_a", "judge_b"], "idk": "judge_a", "ragas": "judge_c"}})
    (generation,) = g.expand(item, "generative", options)
    assert g.followup(item, [], "generative", options) == [generation]  # not answered yet: still wanted
    answers = [answer(generation, "  Paris is the capital of France.\n")]
    round1 = g.followup(item, answers, "generative", options)
    assert [(r["variant"], r["route"], r["max_tokens"]) for r in round1] == [
        ("rb_llm", "judge_a", 1024), ("rb_llm", "judge_b", 1024), ("idk", "judge_a", 16),
        ("statements", "judge_c", 1024)]
    assert [r["request_id"] for r in round1] == [
        "mtrag_generation/c1<::>2#rb_llm@judge_a", "mtrag_generation/c1<::>2#rb_llm@judge_b",
        "mtrag_generation/c1<::>2#idk@judge_a", "mtrag_generation/c1<::>2#statements@judge_c"]
    assert all("[Response]\nParis is the capital of France.\n" in r["messages"][0]["content"]
               for r in round1 if r["variant"] == "idk")
    texts = {"rb_llm": ["Good. Rating: [[8]]", "Rating: 6"], "idk": ["no"],
             "statements": ['{"statements": ["Paris is the capital of France.", "Paris has 2 million people."]}']}
    answers += [answer(r, texts[r["variant"]].pop(0)) for r in round1]
    (verdicts,) = g.followup(item, answers, "generative", options)
    assert (verdicts["variant"], verdicts["route"], verdicts["request_id"]) == (
        "verdicts", "judge_c", "mtrag_generation/c1<::>2#verdicts@judge_c")
    assert verdicts["messages"][0]["content"].endswith(
        "[Context]\nParis is the capital of France.\nFrance is in Europe.\n\n[Statements]\n"
        '["Paris is the capital of France.", "Paris has 2 million people."]\n\n[Output]\n')
    answers.append(answer(verdicts, '{"statements": [{"statement": "Paris is the capital of France.", "reason": '
                                     '"said", "verdict": 1}, {"statement": "Paris has 2 million people.", '
                                     '"reason": "not said", "verdict": 0}]}'))
    assert g.followup(item, answers, "generative", options) == []
    (row,) = g.combine(item, answers, "generative", options, verdict="logprob")
    assert row["response"] == "Paris is the capital of France."
    # paris is the capital of france / the capital of france is paris: LCS "the capital of france", 4 of 6
    assert row["rouge_l"] == pytest.approx(4 / 6)
    assert (row["rb_llm_judges"], row["rb_llm_ratings"]) == (["judge_a", "judge_b"], [0.8, 0.6])
    assert row["rb_llm"] == pytest.approx(0.7) and row["rb_llm_idk"] == pytest.approx(0.7)
    assert (row["idk"], row["idk_word"], row["correct"]) == (0.0, "no", 1.0)
    assert (row["rl_f"], row["rl_f_status"], row["n_statements"], row["n_supported"], row["rl_f_idk"]) == (
        0.5, "scored", 2, 1, 0.5)
    assert (row["rb_alg"], row["bert_recall"], row["error"], row["judge_errors"]) == (None, None, None, None)
    assert (row["setting"], row["responses"], row["n_passages"], row["turn_group"], row["collection"]) == (
        "reference", "generate", 2, "later", "clapnq")


def test_idk_yes_conditions_answerable_to_zero_and_unanswerable_to_one(tmp_path):
    rows = {}
    for answerability in ("ANSWERABLE", "UNANSWERABLE"):
        item = item_of(tmp_path, task(answerability=answerability), f"{answerability}.jsonl")
        (generation,) = g.expand(item, "generative", OPTS)
        answers = [answer(generation, "I do not have specific information.")]
        texts = {"rb_llm": "Rating: [[3]]", "idk": "yes", "statements": '{"statements": []}'}
        answers += [answer(r, texts[r["variant"]]) for r in g.followup(item, answers, "generative", OPTS)]
        assert g.followup(item, answers, "generative", OPTS) == []  # no statements: no verdict request
        (rows[answerability],) = g.combine(item, answers, "generative", OPTS)
    answerable, unanswerable = rows["ANSWERABLE"], rows["UNANSWERABLE"]
    assert answerable["rb_llm"] == unanswerable["rb_llm"] == pytest.approx(0.3)
    assert (answerable["rb_llm_idk"], answerable["rl_f_idk"], answerable["correct"]) == (0.0, 0.0, 0.0)
    assert (unanswerable["rb_llm_idk"], unanswerable["rl_f_idk"], unanswerable["correct"]) == (1.0, 1.0, 1.0)
    assert math.isnan(answerable["rl_f"]) and answerable["rl_f_status"] == "no_statements"


def test_failed_generation_gives_an_error_row_and_no_judging(tmp_path):
    item = item_of(tmp_path, task())
    (generation,) = g.expand(item, "generative", OPTS)
    answers = [answer(generation, None, error="engine: out of memory")]
    assert g.followup(item, answers, "generative", OPTS) == []
    (row,) = g.combine(item, answers, "generative", OPTS)
    assert row["error"] == "generation failed: engine: out of memory" and row["rb_llm"] is None
    (row,) = g.combine(item, [], "generative", OPTS)
    assert row["error"] == "the generation request has no answer"


def test_failed_judges_unknown_idk_and_unparsed_outputs_are_counted_outcomes(tmp_path):
    item = item_of(tmp_path, task())
    options = opts({"responses": "given"})
    given = item_of(tmp_path, task(predictions=[{"text": "Paris."}]), "given.jsonl")
    rb_llm, idk, statements = g.expand(given, "generative", options)
    answers = [answer(rb_llm, None, error="HTTP 500"), answer(idk, "Maybe it does."),
               answer(statements, "I cannot do that.")]
    assert g.followup(given, answers, "generative", options) == []
    (row,) = g.combine(given, answers, "generative", options)
    assert row["judge_errors"] == "rb_llm@self: HTTP 500" and row["error"] is None
    assert (row["rb_llm"], row["rb_llm_idk"], row["rb_llm_judges"]) == (None, None, [])
    assert (row["idk"], row["idk_word"], row["correct"]) == (None, "maybe", None)
    assert math.isnan(row["rl_f"]) and row["rl_f_status"] == "statements_unparsed"
    assert row["response"] == "Paris." and row["responses"] == "given"
    assert g.combine(item, [], "generative", options)[0]["error"] == (
        "responses: given, but the task has no predictions[0].text")


def test_task_ids_and_max_reference_passages_select_tasks(tmp_path):
    item = item_of(tmp_path, task())
    assert g.expand(item, "generative", opts({"task_ids": ["c1::2"]})) != []  # either id spelling
    assert g.expand(item, "generative", opts({"task_ids": ["other<::>1"]})) == []
    assert g.combine(item, [], "generative", opts({"task_ids": ["other<::>1"]})) == []
    assert g.expand(item, "generative", opts({"max_reference_passages": 1})) == []
    assert g.expand(item, "generative", opts({"max_reference_passages": 2})) != []


def test_sample_config_judges_the_given_responses_in_two_rounds_and_resumes():
    options = opts(OmegaConf.to_container(OmegaConf.load(REPO / "conf/benchmarks/mtrag_generation_sample.yaml").options))
    items = list(g.load_items(SAMPLE))
    assert g.check_items(items, options) == []
    round0 = [r for i in items for r in g.expand(i, "generative", options)]
    assert Counter(r["variant"] for r in round0) == {"rb_llm": 10, "idk": 10, "statements": 10}
    assert len({r["request_id"] for r in round0}) == 30 and {r["route"] for r in round0} == {"self"}

    def judge(request):  # the first task is the unanswerable one, its response an IDK
        unanswerable = request["item_id"].endswith("<::>1") and "dd6b" in request["item_id"]
        return answer(request, {"rb_llm": "Rating: [[7]]", "idk": "yes" if unanswerable else "no",
                                "statements": '{"statements": ["S."]}',
                                "verdicts": '{"statements": [{"statement": "S.", "reason": "r", "verdict": 1}]}'}[
            request["variant"]])

    answered = {i["item_id"]: [judge(r) for r in g.expand(i, "generative", options)] for i in items}
    round1 = [r for i in items for r in g.followup(i, answered[i["item_id"]], "generative", options)]
    assert [r["variant"] for r in round1] == ["verdicts"] * 10
    for r in round1:
        answered[r["item_id"]].append(judge(r))
    assert [r for i in items for r in g.followup(i, answered[i["item_id"]], "generative", options)] == []
    rows = [row for i in items for row in g.combine(i, answered[i["item_id"]], "generative", options)]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    assert [r["rouge_l"] for r in rows] == [scorer.score(i["reference"], i["prediction"].strip())["rougeL"].fmeasure
                                            for i in items]
    metrics = aggregate(g, rows, resamples=100)
    overall = metrics["settings"]["reference"]["overall"]
    assert (metrics["n"], metrics["n_errors"], overall["n"]) == (10, 0, 10)
    assert overall["answerability_acc"]["mean"] == 1.0
    assert overall["rb_llm"]["mean"] == pytest.approx(0.7)
    assert overall["rb_llm_idk"]["mean"] == pytest.approx((1.0 + 9 * 0.7) / 10)  # the IDK-yes unanswerable: 1
    assert overall["rl_f"]["mean"] == 1.0 and overall["rb_alg"] == {"mean": None, "n": 0, "ci95": None}


def test_mini_config_generates_for_two_tasks_of_each_class(reference_items):
    options = opts(OmegaConf.to_container(OmegaConf.load(REPO / "conf/benchmarks/mtrag_generation_mini.yaml").options))
    assert g.check_items(reference_items, options) == []
    chosen = [i for i in reference_items if selected(i, options)]
    assert Counter(i["answerability"] for i in chosen) == {"ANSWERABLE": 2, "PARTIAL": 2, "UNANSWERABLE": 2,
                                                           "UNDERSPECIFIED": 2}
    assert Counter(i["turn_group"] for i in chosen) == {"first": 4, "later": 4}
    requests = [r for i in reference_items for r in g.expand(i, "generative", options)]
    assert [r["variant"] for r in requests] == ["generation"] * 8 and {r["max_tokens"] for r in requests} == {256}



def test_response_of_marks_truncated_only_what_the_engine_said_was_cut():
    """Each way to no response, and a response, with its reason and truncated flag pinned whole."""
    from types import SimpleNamespace

    from benchmarks.mtrag.generation.requests import response_of
    given, generated = SimpleNamespace(responses="given"), SimpleNamespace(responses="generated")
    item = {"item_id": "mtrag/t1", "prediction": " the given answer \n"}
    assert response_of(item, {}, given) == ("the given answer", None, False)
    assert response_of({"item_id": "mtrag/t1"}, {}, given) == (
        None, "responses: given, but the task has no predictions[0].text", False)
    assert response_of(item, {}, generated) == (None, "the generation request has no answer", False)
    rid = "mtrag/t1#generation"
    assert response_of(item, {rid: {"text": " made \n"}}, generated) == ("made", None, False)
    assert response_of(item, {rid: {"text": "cut", "truncated": True}}, generated) == ("cut", None, True)
    assert response_of(item, {rid: {"text": None}}, generated) == (None, "generation failed: no text", False)
    assert response_of(item, {rid: {"error": "api: timeout", "truncated": True}}, generated) == (
        None, "generation failed: api: timeout", True)
    assert response_of(item, {rid: {"text": "half", "error": "engine: stopped"}}, generated) == (
        None, "generation failed: engine: stopped", False)  # an error row's text is no response
