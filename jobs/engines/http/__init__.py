"""The HTTP engine: its rules for the driver (engine.py) and its workers' OpenAI-compatible client (client.py).
Imports nothing, so a worker loading the client loads no driver code."""
