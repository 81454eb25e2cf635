"""What a person running ragjudge sees: ragjudge's own lines on the console, the libraries' in the run folder."""
from jobs.console.library_logs import LibraryLogs, verbose_from_env

__all__ = ["LibraryLogs", "verbose_from_env"]
