"""Benchmarks for inductor_cpp: `python -m inductor_cpp.bench <subcommand>`.

Subcommands live in their own modules and register in __main__.py; `timing` holds the shared
timing/reporting helpers (median-of-N timing, thread pinning, ratio formatting, JSON output) so
every benchmark measures and reports the same way.
"""
