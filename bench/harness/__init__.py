"""The benchmark harness: engines, corpus, isolated workers, measurements and the report.

Modules:
    config   -- paths and run options shared by the driver and the workers
    vocab    -- tokenizer loading (local files only) and token byte spellings
    corpus   -- JSONSchemaBench and EBNF grammar loading, sampling, instance serialization
    engines  -- one small adapter class per engine (and per ablation variant)
    tasks    -- the measurements a worker runs for one item
    worker   -- the worker process (one engine, one tokenizer) and its line protocol
    pool     -- worker processes with per-item timeouts, respawned on crash
    stats    -- percentiles and the like-for-like pooling of results
    report   -- the Markdown report and the CDF plots
    sysinfo  -- versions, CPU model and other facts a reader needs to reproduce a run
"""
