"""The judgment requests of utility judgments: counts, the authors' prompts, seeded shuffles, ground-truth
placement, pairs, wordings, orders, requirements and sampling settings."""
import itertools

from utility_cases import BENCH, opts, real_items, user

from benchmarks.utility import answer_prompt, shuffles


def shown(request, passages):
    """The original index of the passage on each line of a listwise prompt, in prompt order."""
    tag = "Passage-{}: " if request["variant"].startswith("listwise_set") else "[{}]: "
    lines = [line.rstrip() for line in user(request).split("\n")]
    return [next(k for k, p in enumerate(passages) if tag.format(i) + p in lines) for i in range(len(passages))]


def test_default_expansion_counts_and_the_authors_prompts():
    item = real_items()[1]
    requests = BENCH.expand(item, "generative", opts())
    forms = [r["variant"].split("/")[0] for r in requests]
    assert {f: forms.count(f) for f in set(forms)} == {"pointwise": 10, "pairwise": 90, "listwise_set": 3,
                                                      "listwise_rank": 3}
    assert len({r["request_id"] for r in requests}) == len(requests)
    assert all(r["request_id"] == f"{item['item_id']}#{r['variant']}" for r in requests)
    by_variant = {r["variant"]: r for r in requests}
    point = by_variant["pointwise/utility/q_first/reasoning/p9"]
    assert point["messages"][0] == {"role": "system", "content": (
        "Given a question and passage, please judge whether the passage has utility in answering the question.\n"
        "Please first provide a brief reasoning you used to judge whether the passage has utility in answering "
        "the above question or not and tell me your overall judgment, like 'My judgment: yes/no'.")}
    assert user(point) == (f"Given a question: when did the right to buy scheme start, a passage: "
                           f"{item['passages'][9]} \n\n" + point["messages"][0]["content"].split("\n", 1)[1])
    pair = by_variant["pairwise/utility/q_first/none/p2v5"]
    assert user(pair) == (f"Given a question: when did the right to buy scheme start, two passages: \n"
                          f"Passage-0: {item['passages'][2]}\nPassage-1: {item['passages'][5]} \n\n"
                          "Please tell me which passage would contribute more utility to answering the above "
                          "question, like 'My choice: Passage-0 or Passage-1'.")
    listset = by_variant["listwise_set/utility/q_first/answer_first/s1"]
    assert user(listset).startswith("Given a question: when did the right to buy scheme start. Please select the "
                                    "passage(s) with utility in answering the question from the following 10 "
                                    "passages: \nPassage-0: ")
    assert user(listset).endswith("that you have selected and then write 'My selection: [<passage-i>, ...]' "
                                  "in the last line.")
    rank = by_variant["listwise_rank/utility/q_first/answer_first/s2"]
    assert rank["messages"][0]["content"] == ("Given a question and rank all following passages in descending "
                                              "order based on their utility in answering the question.\n")
    assert "\n[0]: " in user(rank) and user(rank).endswith("like 'My rank: [i]>[j]>...>[k]'.")
    assert all("temperature" not in r and "max_tokens" not in r for r in requests)  # engine defaults: greedy


def test_listwise_shuffles_are_seeded_distinct_deterministic_shared_and_map_back():
    item = real_items()[0]
    options = {"forms": ["listwise_set", "listwise_rank"], "wordings": ["utility", "relevance"], "k": 5}
    requests = BENCH.expand(item, "generative", opts(**options))
    assert requests == BENCH.expand(dict(item), "generative", opts(**dict(options)))  # same prompts on every call
    perms = {r["variant"]: r["permutation"] for r in requests}
    assert len(perms) == 2 * 2 * 5
    first = [perms[f"listwise_set/utility/q_first/answer_first/s{s}"] for s in range(1, 6)]
    assert len({tuple(p) for p in first}) == 5 and all(sorted(p) == list(range(10)) for p in first)
    assert first != [list(range(10))] * 5
    for variant, perm in perms.items():  # every condition sees the same k inputs
        assert perm == first[int(variant.rsplit("/s", 1)[1]) - 1]
        request = next(r for r in requests if r["variant"] == variant)
        assert shown(request, item["passages"]) == perm  # prompt position i shows original passage perm[i]
    assert shuffles(item, 5) == first
    other = real_items()[1]
    assert shuffles(other, 5) != first  # seeds come from the item id


def test_gt_position_places_a_ground_truth_passage():
    item = real_items()[1]  # its only ground-truth passage is 9
    requests = BENCH.expand(item, "generative", opts(forms=["listwise_set", "pointwise"], gt_position=[0, 4],
                                                    k=3))
    listwise = [r for r in requests if r["variant"].startswith("listwise_set")]
    assert sorted({r["variant"].rsplit("/", 1)[0] for r in listwise}) == [
        "listwise_set/utility/q_first/answer_first/gt0", "listwise_set/utility/q_first/answer_first/gt4"]
    for r in listwise:
        position = int(r["variant"].split("/gt")[1].split("/")[0])
        assert r["permutation"][position] == 9
        assert f"Passage-{position}: {item['passages'][9]}\n" in user(r)
    assert len({tuple(r["permutation"]) for r in listwise if "/gt4/" in r["variant"]}) == 3
    assert sum(r["variant"].startswith("pointwise") for r in requests) == 10  # placement is listwise only
    too_far = BENCH.expand(item, "generative", opts(forms=["listwise_set"], gt_position=10))
    assert too_far == []


def test_pairwise_runs_every_pair_in_both_orders_or_a_seeded_cap():
    item = real_items()[0]
    requests = BENCH.expand(item, "generative", opts(forms=["pairwise"]))
    assert sorted(tuple(r["permutation"]) for r in requests) == sorted(itertools.permutations(range(10), 2))
    r = next(r for r in requests if r["permutation"] == [7, 3])
    assert r["variant"] == "pairwise/utility/q_first/none/p7v3"
    assert f"Passage-0: {item['passages'][7]}\nPassage-1: {item['passages'][3]} " in user(r)
    capped = BENCH.expand(item, "generative", opts(forms=["pairwise"], max_pairs=4))
    pairs = [tuple(r["permutation"]) for r in capped]
    assert len(pairs) == 8 and all((j, i) in pairs for i, j in pairs)
    assert capped == BENCH.expand(item, "generative", opts(forms=["pairwise"], max_pairs=4))


def test_wording_order_requirements_and_sampling_options():
    item = real_items()[0]
    options = {"forms": ["pointwise", "listwise_rank"], "wordings": ["relevance"], "orders": ["passages_first"],
               "requirements": ["cot", "none"], "temperature": 0.7, "max_tokens": 300}
    requests = BENCH.expand(item, "generative", opts(**options))
    conditions = sorted({r["variant"].rsplit("/", 1)[0] for r in requests})
    assert conditions == ["listwise_rank/relevance/p_first/cot", "listwise_rank/relevance/p_first/none",
                          "pointwise/relevance/p_first/cot", "pointwise/relevance/p_first/none"]
    point = next(r for r in requests if r["variant"] == "pointwise/relevance/p_first/cot/p0")
    assert user(point).startswith(f"Given a passage: {item['passages'][0]}, a question: definition of the paleo")
    assert "Let's think step by step. Then tell me your overall judgment of whether the passage is relevant to " \
           "the above question or not" in user(point)
    rank = next(r for r in requests if r["variant"] == "listwise_rank/relevance/p_first/none/s1")
    assert user(rank).index("[9]: ") < user(rank).index("Question: definition of the paleo diet.")
    assert "based on their relevance to the question" in user(rank) and "utility" not in user(rank)
    assert {r["temperature"] for r in requests} == {0.7} and {r["max_tokens"] for r in requests} == {300}
    assert len({r["seed"] for r in requests}) == len(requests)
    assert all(isinstance(r["seed"], int) and 0 <= r["seed"] < 2**31 for r in requests)


def test_answer_prompt():
    messages = answer_prompt("when did the right to buy scheme start", ["It began in 1980.", "Thatcher."])
    assert messages == [{"role": "user", "content": (
        "Given the following information: \nPassage-0: It began in 1980.\nPassage-1: Thatcher. \n\nAnswer the "
        "following question based on the given information with a short answer of a few words.\nQuestion: when "
        "did the right to buy scheme start\nAnswer:")}]
    assert "one or a few sentences" in answer_prompt("q", ["p"], factoid=False)[0]["content"]
    assert answer_prompt("q", [])[0]["content"].startswith("Answer the following question with a short answer")



def test_judgment_messages_roles_and_an_empty_system_prompt():
    """A hand-made prompts mapping: the system message only when its text is not blank; the roles pinned."""
    from benchmarks.utility.prompts import judgment_messages
    prompts = {"forms": {"pointwise": {"instructions": {"req": "Say {word}."}, "system": "S {word}",
                                       "first": "{instruction} Q: {question} P: {passage}"}},
               "wordings": {"w": {"word": "yes"}}}
    assert judgment_messages(prompts, "pointwise", "w", "first", "req", "why?", ["p0"]) == [
        {"role": "system", "content": "S yes"}, {"role": "user", "content": "Say yes. Q: why? P: p0"}]
    prompts["forms"]["pointwise"]["system"] = "  "
    assert judgment_messages(prompts, "pointwise", "w", "first", "req", "why?", ["p0"]) == [
        {"role": "user", "content": "Say yes. Q: why? P: p0"}]
