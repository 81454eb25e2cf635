"""The BM25 retriever: its rules for the driver (engine.py) and the index its workers build and search
(index.py). Imports nothing, so a worker loading the index loads no driver code."""
