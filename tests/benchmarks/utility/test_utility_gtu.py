"""GTU answer generation (utility benchmark, Section 5 / Table 4): the evidence each source hands the
generator, the answer requests of the second round, QA rows and their Table 4 summary, with hand-computed
expectations. The two rounds through the pipeline are in tests/jobs/flow/test_gtu_rounds.py."""
import re

import pytest
from utility_cases import BENCH, REAL, opts

from benchmarks.utility import gtu
from benchmarks.utility import metrics as um
from benchmarks.utility.prompts import answer_prompt
from jobs.flow.reducers import aggregate

OPTIONS = opts(k=3)
CONDITIONS = {"pointwise": "pointwise/utility/q_first/reasoning", "pairwise": "pairwise/utility/q_first/none",
              "listwise_set": "listwise_set/utility/q_first/answer_first",
              "listwise_rank": "listwise_rank/utility/q_first/answer_first"}
SAMPLING = CONDITIONS["listwise_set"] + "/3-sampling"

# The toy judge, in original passage indices.
POINT_YES = {1, 2}
PAIR_TASTE = [1, 3, 4, 0, 2]  # best first: wins 1:8, 3:6, 4:4, 0:2, 2:0
SETS = {"s1": [1, 3], "s2": [3, 4], "s3": [1, 2, 3, 4]}  # written in this order
RANKS = {"s1": [3, 1, 0, 2, 4], "s2": [1, 3, 0, 4, 2], "s3": [3, 0, 1, 2, 4]}


def item(name="a", labels=(0, 1, 0, 1, 0), answers=("William Shakespeare", "Shakespeare"), dataset="NQ"):
    return {"item_id": f"utility/{name}", "subset": dataset or "GTI", "dataset": dataset,
            "question": f"q {name}?", "passages": [f"passage {name}{i}" for i in range(len(labels))],
            "labels": list(labels), "answers": list(answers)}


def judge(request):
    """The toy judge's answer to one judgment request, whatever order its passages were shown in
    ('Shakespeare' to an answer request)."""
    if request["variant"].startswith("answer/"):
        return "Shakespeare"
    form, *_, unit = request["variant"].split("/")
    perm = request["permutation"]
    position = {original: p for p, original in enumerate(perm)}
    if form == "pointwise":
        return f"Brief reasoning.\nMy judgment: {'yes' if perm[0] in POINT_YES else 'no'}"
    if form == "pairwise":
        winner = min(perm, key=PAIR_TASTE.index)
        return f"My choice: Passage-{position[winner]}"
    if form == "listwise_set":
        return "Answer: x.\nMy selection: [" + ", ".join(f"Passage-{position[i]}" for i in SETS[unit]) + "]"
    return "Answer: x.\nMy rank: " + ">".join(f"[{position[i]}]" for i in RANKS[unit])


def reply(request, **extra):
    return {"request_id": request["request_id"], "item_id": request["item_id"], "subset": request["subset"],
            "variant": request["variant"], "error": None, "truncated": False, "n_tokens": 5,
            "text": extra.pop("text") if "text" in extra else judge(request), **extra}


def first_round(it, options=OPTIONS):
    return [reply(r) for r in BENCH.expand(it, "generative", options)]


def evidence_of(requests):
    return {r["variant"].removeprefix("answer/"): r["permutation"] for r in requests}


# ------------------------------------------------------------------------------------------------ followup

def test_followup_hands_each_source_its_evidence_with_one_m_for_the_rank_forms():
    it = item()
    requests = BENCH.followup(it, first_round(it), "generative", OPTIONS)
    # set sizes: pointwise {1, 2} -> 2, listwise-set vote {1, 3, 4} -> 3; m = 2.5 rounded half up = 3
    assert evidence_of(requests) == {
        "none": [], "dense": [0, 1, 2, 3, 4], "ground_truth": [1, 3],
        CONDITIONS["pointwise"]: [1, 2],
        CONDITIONS["pairwise"]: [1, 3, 4],  # top 3 of the wins ranking 1, 3, 4, 0, 2
        CONDITIONS["listwise_set"]: [1, 3, 4],  # in more than half of {1,3}, {3,4}, {1,2,3,4}
        SAMPLING: [3, 1],  # each set once: the earliest ({1,3}) sets the size; 3 has 3 votes, 1 and 4 two
        CONDITIONS["listwise_rank"]: [3, 1, 0],  # RR means 3: 2.5/3, 1: 1.83/3, 0: 1.17/3, 2: .7/3, 4: .65/3
    }
    assert [r["request_id"] for r in requests] == [f"utility/a#{r['variant']}" for r in requests]
    assert requests == BENCH.followup(dict(it), list(reversed(first_round(it))), "generative", opts(k=3))


def test_answer_requests_carry_the_judgment_requests_keys_and_the_answer_prompt():
    it = item()
    options = opts(k=3, temperature=0.5, max_tokens=64)
    judgments = BENCH.expand(it, "generative", options)
    requests = BENCH.followup(it, first_round(it, options), "generative", options)
    assert {tuple(sorted(r)) for r in requests} == {tuple(sorted(r)) for r in judgments}  # one key set
    assert {(type(r["permutation"]), type(r["seed"]), type(r["max_tokens"]), type(r["temperature"]))
            for r in requests + judgments} == {(list, int, int, float)}
    assert len({r["seed"] for r in requests}) == len(requests)
    by_source = {r["variant"]: r for r in requests}
    assert by_source["answer/none"]["messages"] == answer_prompt("q a?", [])
    assert by_source[f"answer/{SAMPLING}"]["messages"] == answer_prompt("q a?", ["passage a3", "passage a1"])
    assert "short answer" in by_source["answer/dense"]["messages"][0]["content"]
    ms = item("m", dataset="MSMARCO-QA")
    messages = BENCH.followup(ms, first_round(ms), "generative", OPTIONS)[1]["messages"]
    assert messages == answer_prompt("q m?", [f"passage m{i}" for i in range(5)], factoid=False)
    assert (gtu.is_factoid("NQ"), gtu.is_factoid("HotpotQA"), gtu.is_factoid(None),
            gtu.is_factoid("MSMARCO-QA"), gtu.is_factoid("MS MARCO")) == (True, True, True, False, False)


def test_answer_m_fixes_m_and_k_1_has_no_sampling_source():
    it = item()
    evidence = evidence_of(BENCH.followup(it, first_round(it), "generative", opts(k=3, answer_m=1)))
    assert evidence[CONDITIONS["pairwise"]] == [1] and evidence[CONDITIONS["listwise_rank"]] == [3]
    assert evidence[CONDITIONS["listwise_set"]] == [1, 3, 4]  # sets keep their own size
    one = opts(k=1)
    sources = evidence_of(BENCH.followup(it, first_round(it, one), "generative", one))
    assert not any(s.endswith("-sampling") for s in sources)
    assert sources[CONDITIONS["listwise_set"]] == [1, 3]  # the single shuffle s1
    # m = mean(2, 2) = 2
    assert sources[CONDITIONS["pairwise"]] == [1, 3] and sources[CONDITIONS["listwise_rank"]] == [3, 1]


def test_sources_without_evidence_get_no_request_and_an_error_row():
    it = item(labels=(0, 0, 0, 0, 0))  # GTU: no ground-truth passage among the candidates
    answers = [a for a in first_round(it) if a["variant"] != CONDITIONS["listwise_set"] + "/s2"]
    requests = BENCH.followup(it, answers, "generative", OPTIONS)
    sources = evidence_of(requests)
    assert not {"ground_truth", CONDITIONS["listwise_set"], SAMPLING} & set(sources)
    assert sources[CONDITIONS["pairwise"]] == [1, 3]  # m from the one set condition left: pointwise, 2
    combined_rows = BENCH.combine(it, answers + [reply(r) for r in requests], "generative", OPTIONS)
    rows = {r["source"]: r for r in combined_rows if r["form"] == "qa"}
    assert rows["ground_truth"]["error"].startswith("no labelled passage among the candidates")
    assert rows[SAMPLING]["error"] == "judgments failed (no answer for request(s) s2)"
    assert rows["ground_truth"]["n_requests"] == 0 and rows["ground_truth"]["evidence"] is None
    ranks_only = opts(forms=["pairwise"])
    sources = evidence_of(BENCH.followup(it, first_round(it, ranks_only), "generative", ranks_only))
    assert sorted(sources) == ["dense", "none"]
    row = next(r for r in BENCH.combine(it, first_round(it, ranks_only), "generative", ranks_only)
               if r.get("source") == CONDITIONS["pairwise"])
    assert "set options.answer_m" in row["error"] and row["correct"] is None


def test_gti_items_and_answer_false_get_no_followup():
    gti = item(answers=())
    assert BENCH.followup(gti, first_round(gti), "generative", OPTIONS) == []
    assert all(r["form"] != "qa" for r in BENCH.combine(gti, first_round(gti), "generative", OPTIONS))
    it = item()
    off = opts(k=3, answer=False)
    assert BENCH.followup(it, first_round(it, off), "generative", off) == []
    assert len(BENCH.combine(it, first_round(it, off), "generative", off)) == 4
    for real in BENCH.load_items(str(REAL)):
        assert BENCH.followup(real, [], "generative", opts()) == []  # the two released GTI lists have no answers


# ------------------------------------------------------------------------------------------------ combine

def qa_answers(it, texts, options=OPTIONS):
    """Answers to the item's answer requests: texts maps a source to its text, or to a dict of answer fields
    (an error); a source left out gets no answer."""
    out = []
    for request in BENCH.followup(it, first_round(it, options), "generative", options):
        source = request["variant"].removeprefix("answer/")
        if source in texts:
            value = texts[source]
            out.append(reply(request, **(value if isinstance(value, dict) else {"text": value})))
    return out


NQ_A = {"none": "Christopher Marlowe", "dense": "Shakespeare", "ground_truth": "The Shakespeare.",
        CONDITIONS["pointwise"]: "William Shakespeare wrote it",
        CONDITIONS["pairwise"]: {"error": "context overflow", "text": None, "truncated": True},
        SAMPLING: "shakespeare, william", CONDITIONS["listwise_rank"]: ""}  # listwise_set: no answer
NQ_B = {"none": "1990"} | dict.fromkeys(("dense", "ground_truth", *CONDITIONS.values(), SAMPLING), "1989")
MS_GOLD = ["the cat is on the mat", "a cat lies on a mat"]
MS = {"none": "dogs bark", "dense": "the cat sat on the mat"}


def combined():
    a, b = item("a"), item("b", labels=(1, 0, 0, 0, 0), answers=("1989", "9 November 1989"))
    ms = item("ms", labels=(0, 0, 1, 0, 0), answers=MS_GOLD, dataset="MSMARCO-QA")
    return {name: BENCH.combine(it, first_round(it) + qa_answers(it, texts), "generative", OPTIONS)
            for name, it, texts in (("a", a, NQ_A), ("b", b, NQ_B), ("ms", ms, MS))}


def test_combine_scores_each_source_em_f1_factoid_rouge_bleu_non_factoid():
    rows = combined()
    assert [r["form"] for r in rows["a"]] == [*CONDITIONS] + ["qa"] * 8
    qa = {r["source"]: r for r in rows["a"] if r["form"] == "qa"}
    assert list(qa) == ["none", "dense", "ground_truth", CONDITIONS["pointwise"], CONDITIONS["pairwise"],
                        CONDITIONS["listwise_set"], SAMPLING, CONDITIONS["listwise_rank"]]
    assert {s: (r["em"], r["f1"]) for s, r in qa.items() if not r["error"]} == {
        "none": (0.0, 0.0), "dense": (1.0, 1.0), "ground_truth": (1.0, 1.0),
        CONDITIONS["pointwise"]: (0.0, pytest.approx(2 / 3)),  # vs "william shakespeare": P 2/4, R 2/2
        SAMPLING: (0.0, 1.0), CONDITIONS["listwise_rank"]: (0.0, 0.0)}
    assert all(r["correct"] == r["f1"] and r["rouge_l"] is None for r in qa.values() if not r["error"])
    pointwise = qa[CONDITIONS["pointwise"]]
    assert (pointwise["condition"], pointwise["evidence"], pointwise["n_evidence"], pointwise["m"]) == (
        "qa/" + CONDITIONS["pointwise"], [1, 2], 2, None)
    assert pointwise["answer"] == "William Shakespeare wrote it" and pointwise["factoid"] is True
    rank, pair, lset = (qa[CONDITIONS[form]] for form in ("listwise_rank", "pairwise", "listwise_set"))
    assert (rank["m"], rank["evidence"]) == (3, [3, 1, 0])
    assert pair["error"] == "context overflow" and pair["truncated"]
    assert lset["error"] == f"no answer for request answer/{CONDITIONS['listwise_set']}"
    assert lset["correct"] is None
    assert len({tuple(r) for r in qa.values()}) == 1  # one column set for every QA row
    ms = {r["source"]: r for r in rows["ms"] if r["form"] == "qa"}
    dense = ms["dense"]
    assert dense["factoid"] is False and dense["em"] is None and dense["f1"] is None
    assert dense["rouge_l"] == pytest.approx(5 / 6) == um.rouge_l("the cat sat on the mat", MS_GOLD)
    assert dense["correct"] == dense["rouge_l"]
    bleus = um.bleu("the cat sat on the mat", MS_GOLD)
    assert [dense[f"bleu_{n}"] for n in range(1, 5)] == bleus and bleus[0] == pytest.approx(5 / 6)
    assert ms["none"]["rouge_l"] == 0.0 and ms["ground_truth"]["evidence"] == [2]
    assert ms["ground_truth"]["error"] == "no answer for request answer/ground_truth"
    # the judgment rows are those of a GTI item with the same answers
    gti = item("a", answers=())
    assert rows["a"][:4] == BENCH.combine(gti, first_round(gti), "generative", OPTIONS)


def test_summarize_table_4_macro_over_questions_per_source_and_dataset():
    rows = [r for part in combined().values() for r in part]
    m = aggregate(BENCH, rows, resamples=200)
    assert sorted(m["conditions"]) == sorted(CONDITIONS.values())  # judgment summaries as before
    # {1,3,4}: F1 0.8 on a (gold 1, 3), 0 on b (gold 0)
    assert m["conditions"][CONDITIONS["listwise_set"]]["subsets"]["NQ"]["f1"] == pytest.approx(0.4)
    assert m["n_errors"] == 2 + 6  # a: pairwise, listwise_set; ms: ground_truth and the five judgment sources
    qa = m["qa"]
    assert list(qa) == ["none", "dense", "ground_truth", CONDITIONS["listwise_rank"],
                        CONDITIONS["listwise_set"], SAMPLING, CONDITIONS["pairwise"], CONDITIONS["pointwise"]]
    nq = {source: entry["subsets"]["NQ"] for source, entry in qa.items()}
    assert (nq["none"]["em"], nq["none"]["f1"], nq["none"]["n"]) == (0.0, 0.0, 2)
    assert (nq["dense"]["em"], nq["dense"]["correct"], nq["dense"]["evidence_size"]) == (1.0, 1.0, 5.0)
    point = nq[CONDITIONS["pointwise"]]
    assert point["em"] == 0.5 and point["f1"] == pytest.approx(5 / 6) and point["correct"] == point["f1"]
    lo, hi = point["f1_ci95"]
    assert 2 / 3 - 1e-9 <= lo <= 5 / 6 <= hi <= 1.0
    assert point["evidence_size"] == 2.0 and "rouge_l" not in point
    pair = nq[CONDITIONS["pairwise"]]
    assert (pair["n"], pair["em"], pair["error_rate"], pair["truncated_rate"]) == (1, 1.0, 0.5, 0.5)
    assert nq["ground_truth"]["evidence_size"] == 1.5  # a: [1, 3], b: [0]
    msq = qa["dense"]["subsets"]["MSMARCO-QA"]
    assert msq["rouge_l"] == pytest.approx(5 / 6) and "em" not in msq and msq["n"] == 1
    assert msq["bleu_4"] == pytest.approx(um.bleu("the cat sat on the mat", MS_GOLD)[3])
    assert qa["ground_truth"]["subsets"]["MSMARCO-QA"] == {
        "n": 0, "correct": None, "correct_ci95": None, "error_rate": 1.0, "truncated_rate": 0.0,
        "evidence_size": None}
    assert m == aggregate(BENCH, list(reversed(rows)), resamples=200)

    text = BENCH.table_text([{**m, "model": "toy", "kind": "generative", "note": ""}])
    lines = text.splitlines()
    start = lines.index("GTU answers on each evidence source (Table 4), % macro over questions [95% CI]; "
                        "passages: mean number handed over")
    assert re.split(r"\s{2,}", lines[start + 1]) == [
        "Model", "Evidence", *(f"MSMARCO-QA {n}" for n in ("ROUGE-L", "BLEU-1", "BLEU-2", "BLEU-3",
                                                           "BLEU-4")),
        "MSMARCO-QA passages", "NQ EM", "NQ F1", "NQ passages"]
    dense = re.split(r"\s{2,}", lines[start + 3])
    assert dense[:3] == ["toy", "dense", "83.3 [83.3, 83.3]"] and dense[-4:] == [
        "5.0", "100.0 [100.0, 100.0]", "100.0 [100.0, 100.0]", "5.0"]
    ground_truth = re.split(r"\s{2,}", lines[start + 4])
    assert ground_truth == ["toy", "ground_truth", *["-"] * 6, *["100.0 [100.0, 100.0]"] * 2, "1.5"]
    assert [re.split(r"\s{2,}", line)[1] for line in lines[start + 2:start + 2 + len(qa)]] == list(qa)
    assert any(line.startswith("Utility judgments: Evidence sets") for line in lines)

