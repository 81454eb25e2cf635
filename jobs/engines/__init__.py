"""Who answers a cell's requests. One folder per engine, its driver-side rules and its worker-side code together:

vllm                   engine.py; server.py (the async engine actor), stage.py (the Ray Data `ask` stage and
                       vLLM's settings), serve_judge.py (a shared Ray Serve judge), ranks.py (tensor-parallel ranks)
transformers           engine.py; model.py (a model and its score head), padded_batch.py, scorers.py (the actor
                       and stage), heads.py and reward_nets.py (reward-model heads vLLM cannot load)
http                   engine.py; client.py (an OpenAI-compatible client, also read by the batch engines)
openai_batch,          engine.py each; batch.py here holds what the two share
anthropic_batch
stand_in               engine.py (canned replies for tests and plans)
bm25,                  engine.py; index.py (the index its searchers load: actors.retrievers.QuerySearcher)
sentence_transformers

Each engine.py ends in `register(...)` (base.py), found by folder on the first lookup, so no list names them. A
folder's other modules are worker code: they import only actors/, benchmarks/ and their own folder, never the
driver's packages, and this file imports nothing, so a Ray worker that loads an engine's actor pays for that
engine alone (tests/test_layout.py). Beside the folders, the driver's side of every engine: the registry and
its Engine base (base.py), the sweep's engine host (host.py), demands, preflight and readiness checks, weights.
"""
