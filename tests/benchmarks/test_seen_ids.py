"""benchmarks.records.SeenIds: the ids a file walk has read, held as digests in sorted arrays once there are
many; a repeat is found whether its first reading is still among the newest ids or already merged, and it
names the file and row of that first reading."""
import json
from pathlib import Path

import numpy as np

from benchmarks.rag_rewardbench.load import load_items
from benchmarks.records import SeenIds


def test_a_repeat_is_found_before_and_after_the_merge_naming_where_it_was_first_read():
    seen = SeenIds()
    for n in range(40_000):  # more than the first merge's 32,768: the early ids are in the sorted arrays
        seen.add(f"item-{n}", "a.jsonl" if n < 20_000 else "b.jsonl", n + 1)
    assert len(seen.digests) == 32_768 and len(seen.recent) == 40_000 - 32_768
    assert seen.where("item-5") == "a.jsonl: row 6"  # merged
    assert seen.where("item-39999") == "b.jsonl: row 40000"  # still among the newest
    assert seen.where("item-40000") is None and "item-40000" not in seen
    assert "item-20000" in seen and None not in seen


def test_a_duplicate_pair_far_down_a_file_is_an_error_row_naming_the_first(tmp_path: Path):
    rows = [{"id": f"p{n}", "subset": "helpful-general", "prompt": "q", "chosen": "a", "reject": "b"}
            for n in range(33_000)]
    rows.append(dict(rows[7]))  # a repeat of row 8, read 33,000 rows earlier
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    items = list(load_items(str(path)))
    bad = [i for i in items if i.get("error")]
    assert len(items) == 33_001 and len(bad) == 1
    assert bad[0]["row"] == 33_001 and f"{path}: row 8" in bad[0]["error"]
    assert bad[0]["item_id"] != items[7]["item_id"]  # an error row never takes the good row's id


def test_ids_merged_in_many_rounds_are_all_found_in_their_places_and_kept_sorted():
    seen = SeenIds()
    for n in range(150_000):  # merges at 32,768 ids and every eighth more: the later ones insert into a sorted run
        seen.add(f"item-{n}", "a.jsonl", n + 1)
    assert len(seen.digests) == 131_072 and len(seen.recent) == 150_000 - 131_072  # four merges
    assert (seen.digests[1:] >= seen.digests[:-1]).all()
    assert all(seen.where(f"item-{n}") == f"a.jsonl: row {n + 1}" for n in range(0, 150_000, 997))


def test_a_digest_read_twice_keeps_the_first_place_first():
    """Two ids with one 64-bit digest (odds of about 3e-8 at a million ids) are told apart by their places:
    the one read first must stay before the other in the sorted arrays, whichever merge brings the second."""
    seen = SeenIds()
    seen.digests, seen.places = np.array([5, 9], np.uint64), np.array([1, 2], np.uint64)
    seen.recent = {9: 3, 7: 4, 1: 5}
    seen._merge()
    assert seen.digests.tolist() == [1, 5, 7, 9, 9] and seen.places.tolist() == [5, 1, 4, 2, 3]
