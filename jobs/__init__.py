"""How a sweep flows and where it lands, one subpackage per question, each importing only those before it:

config    what a sweep, a model and a benchmark are (schemas, loading, the model registry)
store     where a run lives (the run root on a local path or S3, retries, redaction, the lease, manifest.json)
engines   who answers (the engine registry, the sweep's engine host, demands, preflight and readiness checks)
flow      a benchmark's walk from its data to its metrics, written once (rounds, recorder, reducers, retrieval,
          the encoder stage)
analysis  what the answers mean (leaderboards, paired tests, reliability, comparisons, the report)
sweep     how a sweep runs (pipeline, cells, admission, interrupts, progress)
plan      what a sweep will cost before it runs
validate  whether each model scores the same on every path it could be scored on
cli       `ragjudge`, one module per verb
"""
