"""The OpenAI Batch API engine (engine.py); the driver submits and polls, so it has no worker code."""
