"""The vLLM engine: its rules for the driver (engine.py) and the code its Ray workers run (server, stage,
serve_judge, ranks). Imports nothing, so a worker loading one of them loads no driver code."""
