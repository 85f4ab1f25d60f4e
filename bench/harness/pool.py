"""Worker processes with per-item timeouts: a crash or hang of an engine never stops a run.

Each engine gets its own worker processes (so an engine's crash only restarts that engine's
worker, and engines never share a process). At most ``jobs`` items run at once across all
engines; with ``jobs=1`` (the default, best for timing) one item runs at a time.

An item that outlives its timeout has its worker's whole process group killed; an item whose
worker dies is recorded as crashed (with the exit status and the tail of the worker's log).
Whatever the item had reported before that is kept. A fresh worker is started for the next
item of that engine. An engine whose workers fail to start twice in a row is disabled and its
remaining items are recorded with the start-up error.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .config import BENCH_DIR

STARTUP_TIMEOUT_S = 600.0
MAX_STARTUP_FAILURES = 2


@dataclass
class Task:
    """One item for one engine."""

    id: int
    engine: str
    kind: str  # "schema" | "grammar" | "batch"
    item: str
    timeout_s: float
    payload: dict[str, Any] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "item": self.item, **self.payload}


@dataclass
class _Worker:
    engine: str
    serial: int
    proc: subprocess.Popen
    log_path: Path
    started_at: float
    ready: bool = False
    dead: bool = False
    task: Optional[Task] = None
    deadline: float = 0.0
    partial: dict[str, Any] = field(default_factory=dict)


class WorkerPool:
    """Runs tasks on per-engine worker processes; see the module docstring."""

    def __init__(self, tokenizer: str, jobs: int, log_dir: Path) -> None:
        self.tokenizer = tokenizer
        self.jobs = max(1, jobs)
        self.log_dir = log_dir
        self.engine_info: dict[str, dict[str, Any]] = {}
        self._events: "queue.Queue[tuple[_Worker, Optional[dict[str, Any]]]]" = queue.Queue()
        self._workers: list[_Worker] = []
        self._serial = 0
        self._startup_failures: dict[str, int] = {}
        self._disabled: dict[str, str] = {}
        log_dir.mkdir(parents=True, exist_ok=True)

    # ---- process management -----------------------------------------------------------

    def _spawn(self, engine: str) -> _Worker:
        self._serial += 1
        log_path = self.log_dir / f"worker-{engine}-{self._serial}.log"
        env = dict(os.environ)
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "harness.worker", "--engine", engine, "--tokenizer", self.tokenizer],
                cwd=BENCH_DIR, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True, text=True, encoding="utf-8", bufsize=1,
            )
        worker = _Worker(engine, self._serial, proc, log_path, time.monotonic())
        threading.Thread(target=self._read, args=(worker,), daemon=True).start()
        self._workers.append(worker)
        return worker

    def _read(self, worker: _Worker) -> None:
        assert worker.proc.stdout is not None
        for line in worker.proc.stdout:
            try:
                self._events.put((worker, json.loads(line)))
            except ValueError:
                continue
        self._events.put((worker, None))

    def _kill(self, worker: _Worker) -> None:
        worker.dead = True
        try:
            os.killpg(worker.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        worker.proc.wait()
        if worker in self._workers:
            self._workers.remove(worker)

    def close(self) -> None:
        """Ends every worker (stdin closed first so they exit on their own)."""
        for worker in list(self._workers):
            try:
                if worker.proc.stdin:
                    worker.proc.stdin.close()
                worker.proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, OSError):
                pass
            self._kill(worker)

    def _log_tail(self, worker: _Worker, chars: int = 800) -> str:
        try:
            return worker.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # ---- scheduling ---------------------------------------------------------------------

    def _send(self, worker: _Worker) -> None:
        assert worker.task is not None and worker.proc.stdin is not None
        worker.deadline = time.monotonic() + worker.task.timeout_s
        worker.partial = {"id": worker.task.id, "engine": worker.task.engine, "kind": worker.task.kind,
                          "item": worker.task.item, **{k: v for k, v in worker.task.payload.items() if k != "options"}}
        try:
            worker.proc.stdin.write(json.dumps(worker.task.message()) + "\n")
            worker.proc.stdin.flush()
        except OSError:
            pass  # the worker died; its EOF event finalizes the task

    def _assign(self, task: Task) -> None:
        idle = [w for w in self._workers if w.engine == task.engine and w.task is None and not w.dead]
        worker = idle[0] if idle else self._spawn(task.engine)
        worker.task = task
        if worker.ready:
            self._send(worker)

    def _finish(self, worker: _Worker, outcome: str, on_result: Callable[[dict[str, Any]], None]) -> None:
        task = worker.task
        if task is None:
            return
        result = worker.partial or {"id": task.id, "engine": task.engine, "kind": task.kind, "item": task.item}
        result["outcome"] = outcome
        if outcome != "done":
            if "status" not in result:
                result["status"] = outcome  # "timeout" or "crashed" before compile finished
            else:
                result["incomplete"] = outcome
            if outcome == "crashed":
                result["exit_code"] = worker.proc.poll()
                result["log_tail"] = self._log_tail(worker)
        worker.task = None
        worker.partial = {}
        on_result(result)

    def _fail_engine(self, engine: str, reason: str, pending: "deque[Task]", on_result: Callable[[dict[str, Any]], None]) -> None:
        self._disabled[engine] = reason
        for task in [t for t in pending if t.engine == engine]:
            pending.remove(task)
            on_result({"id": task.id, "engine": task.engine, "kind": task.kind, "item": task.item,
                       "outcome": "engine_unavailable", "status": "error", "error": reason})

    def run(self, tasks: list[Task], on_result: Callable[[dict[str, Any]], None]) -> None:
        """Runs ``tasks`` (in order, ``jobs`` at a time) and calls ``on_result`` for each."""
        pending: deque[Task] = deque(tasks)
        while True:
            running = [w for w in self._workers if w.task is not None]
            while pending and len(running) < self.jobs:
                task = pending.popleft()
                if task.engine in self._disabled:
                    on_result({"id": task.id, "engine": task.engine, "kind": task.kind, "item": task.item,
                               "outcome": "engine_unavailable", "status": "error", "error": self._disabled[task.engine]})
                    continue
                self._assign(task)
                running = [w for w in self._workers if w.task is not None]
            if not running:
                return
            now = time.monotonic()
            deadlines = [w.deadline if w.ready else w.started_at + STARTUP_TIMEOUT_S for w in running]
            try:
                worker, message = self._events.get(timeout=max(0.05, min(deadlines) - now))
            except queue.Empty:
                self._expire(running, pending, on_result)
                continue
            if worker.dead:
                continue
            if message is None:
                self._on_exit(worker, pending, on_result)
            elif message.get("event") == "ready":
                worker.ready = True
                self._startup_failures[worker.engine] = 0
                self.engine_info.setdefault(worker.engine, {k: v for k, v in message.items() if k != "event"})
                if worker.task is not None:
                    self._send(worker)
            elif worker.task is not None and message.get("id") == worker.task.id:
                self._on_event(worker, message, on_result)

    def _on_event(self, worker: _Worker, message: dict[str, Any], on_result: Callable[[dict[str, Any]], None]) -> None:
        event = message.get("event")
        if event == "set":
            worker.partial.update(message["fields"])
        elif event == "add":
            worker.partial.setdefault(message["key"], []).append(message["value"])
        elif event == "done":
            self._finish(worker, "done", on_result)

    def _on_exit(self, worker: _Worker, pending: "deque[Task]", on_result: Callable[[dict[str, Any]], None]) -> None:
        worker.proc.wait()
        if not worker.ready:
            count = self._startup_failures.get(worker.engine, 0) + 1
            self._startup_failures[worker.engine] = count
            task = worker.task
            self._kill(worker)
            if count >= MAX_STARTUP_FAILURES:
                reason = f"worker for {worker.engine} could not start: {self._log_tail(worker, 400)}"
                if task is not None:
                    pending.appendleft(task)
                self._fail_engine(worker.engine, reason, pending, on_result)
            elif task is not None:
                pending.appendleft(task)  # try once more with a fresh worker
            return
        self._finish(worker, "crashed", on_result)
        self._kill(worker)

    def _expire(self, running: list[_Worker], pending: "deque[Task]", on_result: Callable[[dict[str, Any]], None]) -> None:
        now = time.monotonic()
        for worker in running:
            if worker.ready and now >= worker.deadline:
                self._kill(worker)
                self._finish(worker, "timeout", on_result)
            elif not worker.ready and now >= worker.started_at + STARTUP_TIMEOUT_S:
                task = worker.task
                self._kill(worker)
                self._fail_engine(worker.engine, f"worker for {worker.engine} did not start in {STARTUP_TIMEOUT_S:.0f}s",
                                  pending, on_result)
                if task is not None:
                    on_result({"id": task.id, "engine": task.engine, "kind": task.kind, "item": task.item,
                               "outcome": "engine_unavailable", "status": "error", "error": "worker start timed out"})
