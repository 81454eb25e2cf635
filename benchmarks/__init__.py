"""What is measured: loaders, request expansion, prompts, parsers and metrics. Pure Python, no Ray, no models.

The contract every benchmark implements, and the registry of benchmarks, is benchmarks/protocol.py.
"""
