"""What every engine's workers share (each engine's own worker code is in its folder, jobs/engines/<name>/):
how calls reach an engine actor and its ledger, the machine's hardware, where model weights are made and found,
sampling settings, prompt templating, the retrievers' searcher and cached indexes, and BERTScore for metrics."""
