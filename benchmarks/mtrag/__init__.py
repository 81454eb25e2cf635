"""mtRAG (seeds/mtrag.txt; rules in docs/protocols.md 3): two benchmarks over the same tasks. `generation`: a
model answers (or is given the answer), judges score it; `retrieval`: retrievers rank passages, scored as the
authors' script scores them. `common`: task ids, domains and run files, which both read."""
