"""The stand-in engine (engine.py): canned replies in the driver's process, for tests and dry runs."""
