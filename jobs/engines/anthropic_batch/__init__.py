"""The Anthropic Message Batches engine (engine.py); the driver submits and polls, so it has no worker code."""
