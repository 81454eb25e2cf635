"""The transformers engine: its rules for the driver (engine.py) and the code its Ray workers run (model,
heads, reward_nets, padded_batch, scorers). Imports nothing, so a worker loading one of them loads no driver code."""
