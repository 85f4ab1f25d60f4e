"""A worker process: one engine, one tokenizer, tasks read from stdin as JSON lines.

Started by :mod:`harness.pool` as ``python -m harness.worker --engine NAME --tokenizer NAME``.
Protocol (one JSON object per line):

* worker -> driver ``{"event": "ready", "setup_s", "version", "settings"}`` once set up;
* driver -> worker ``{"id", "kind": "schema" | "grammar" | "batch", "item", "options", ...}``;
* worker -> driver ``{"id", "event": "set", "fields": {...}}`` and
  ``{"id", "event": "add", "key", "value"}`` while measuring, then ``{"id", "event": "done"}``.

The protocol uses a private duplicate of stdout; the process's own stdout is pointed at
stderr so that anything an engine prints cannot corrupt the protocol.

Fault injection, to check the pool's isolation by hand: ``XG2_BENCH_FAULT=ENGINE:ITEM:crash``
(or ``:hang``) makes the worker abort (or hang) when it receives that item.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import traceback
from typing import Any, TextIO

from .config import WorkOptions
from .engines import make_engine
from .tasks import BatchState, run_batch_task, run_grammar_task, run_schema_task
from .vocab import load_vocab


def _protocol_stream() -> TextIO:
    """A line-buffered writer on the original stdout; fd 1 is redirected to stderr."""
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(proto_fd, "w", buffering=1, encoding="utf-8")


def _inject_fault(engine_name: str, item: str) -> None:
    """Aborts or hangs on the item named by ``$XG2_BENCH_FAULT`` (see the module docstring)."""
    fault = os.environ.get("XG2_BENCH_FAULT", "")
    for kind, action in (("crash", os.abort), ("hang", lambda: time.sleep(1e9))):
        if fault == f"{engine_name}:{item}:{kind}":
            action()


def serve(engine_name: str, tokenizer_name: str) -> int:
    """Sets the engine up, then runs tasks until stdin closes."""
    proto = _protocol_stream()

    def send(message: dict[str, Any]) -> None:
        proto.write(json.dumps(message) + "\n")

    start = time.perf_counter()
    vocab = load_vocab(tokenizer_name)
    vocab_s = time.perf_counter() - start
    start = time.perf_counter()
    engine = make_engine(engine_name, vocab)
    send({"event": "ready", "setup_s": time.perf_counter() - start, "vocab_s": vocab_s,
          "version": engine.version(), "settings": engine.settings(), "pid": os.getpid()})
    batch_state = BatchState()
    for line in sys.stdin:
        if not line.strip():
            continue
        task = json.loads(line)
        task_id = task["id"]

        def emit(kind: str, *args: Any, _id: Any = task_id) -> None:
            if kind == "set":
                send({"id": _id, "event": "set", "fields": args[0]})
            else:
                send({"id": _id, "event": "add", "key": args[0], "value": args[1]})

        _inject_fault(engine_name, task["item"])
        try:
            options = WorkOptions.from_dict(task.get("options", {}))
            if task["kind"] == "schema":
                run_schema_task(engine, vocab, task, options, emit)
            elif task["kind"] == "grammar":
                run_grammar_task(engine, vocab, task, options, emit)
            elif task["kind"] == "batch":
                run_batch_task(engine, vocab, task, batch_state, emit)
            else:
                raise ValueError(f"unknown task kind {task['kind']!r}")
        except Exception as error:  # a harness or engine failure outside the compile step
            emit("set", {"harness_error": f"{type(error).__name__}: {error}"[:500]})
            traceback.print_exc()
        emit("set", {"cache_bytes_after": engine.cache_memory_bytes(),
                     "worker_max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss})
        send({"id": task_id, "event": "done"})
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", required=True)
    parser.add_argument("--tokenizer", required=True)
    args = parser.parse_args()
    return serve(args.engine, args.tokenizer)


if __name__ == "__main__":
    sys.exit(main())
