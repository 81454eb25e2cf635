"""How a sweep flows and where it lands: CLI, pipeline, reducers, storage, reports."""
