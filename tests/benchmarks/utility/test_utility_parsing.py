"""Reading a utility judge's verdict from its text (docs/protocols.md 4)."""
import pytest

from benchmarks.utility import parsing as up


@pytest.mark.parametrize("text, verdict", [
    ("The passage defines the paleo diet directly.\n\nMy judgment: yes", 1),
    ("Reasoning: it talks about Bulletproof, not Paleo.\nMy judgment: No.", 0),
    ("**My judgment:** **Yes**", 1),
    ("My judgment is yes, since it answers the question.", 1),
    ("At first glance, my judgment: yes. But on reflection the date is wrong. My judgment: no", 0),
    ("I would answer like 'My judgment: yes/no'.", None),  # the format echoed back
    ("The passage is useful.", None),
    ("", None), (None, None),
])
def test_parse_judgment(text, verdict):
    assert up.parse_judgment(text) == verdict


@pytest.mark.parametrize("text, verdict", [
    ("Passage-1 states the Housing Act 1980 directly.\nMy choice: Passage-1", 1),
    ("My choice: **Passage-0**.", 0),
    ("My choice: Passage 0", 0),
    ("My choice is Passage-1 because it names the year.", 1),
    ("You asked for 'My choice: Passage-0 or Passage-1'. My choice: Passage-0", 0),
    ("My choice: Passage-0 or Passage-1", None),
    ("Both passages are equally useful.", None),
    ("My choice: Passage-2", None),
])
def test_parse_choice(text, verdict):
    assert up.parse_choice(text) == verdict


@pytest.mark.parametrize("text, ids", [
    ("Answer: The Right to Buy scheme started in 1980.\nMy selection: [Passage-3, Passage-7]", [3, 7]),
    ("My selection: [3], [7]", [3, 7]),
    ("My selection: 3, 7", [3, 7]),
    ("My selection: [passage-2 passage-2 passage-9]", [2, 9]),  # deduplicated
    ("**My selection:** [Passage-4, Passage-12]", [4]),  # out of range dropped
    ("Draft - My selection: [Passage-1]\nOn second thought:\nMy selection: [Passage-5]", [5]),  # the last
    ("My selection:\n[Passage-6]", [6]),  # on the next line
    ("My selection: []", []),
    ("My selection: None of the passages.", []),
    ("Then write 'My selection: [<passage-i>, ...]' in the last line.", None),  # the format echoed back
    ("The answer is 1980.", None),
    (None, None),
])
def test_parse_selection(text, ids):
    assert up.parse_selection(text, 10) == ids


@pytest.mark.parametrize("text, ids", [
    ("The scheme started in 1980.\nMy rank: [3]>[1]>[0]>[2]", [3, 1, 0, 2]),
    ("My rank: [3] > [1] > [3] > [12] > [2]", [3, 1, 2]),  # deduplicated, out of range dropped
    ("My rank: 4 > 0 > 9", [4, 0, 9]),
    ("**My rank:** [Passage-2] > [Passage-5]", [2, 5]),
    ("My rank: Passage-2 > Passage-5", [2, 5]),
    ("First try: My rank: [1]>[2]\nFinal: My rank: [2]>[1]", [2, 1]),
    ("My rank: [i]>[j]>...>[k]", None),
    ("I cannot rank these passages.", None),
    ("My rank: [11]>[12]", None),
])
def test_parse_rank(text, ids):
    assert up.parse_rank(text, 10) == ids

