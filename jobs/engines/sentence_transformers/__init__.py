"""The dense retriever: its rules for the driver (engine.py) and its workers' encoder, passage stage and
index (index.py). Imports nothing, so a worker loading them loads no driver code."""
