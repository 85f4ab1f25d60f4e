"""Run by test_concurrency.test_fork_while_threads_hold_engine_locks in a process of its own.

Threads compile distinct grammars and fill masks on one shared compiler (so the engine's
process-wide and shared per-object locks are taken all the time) while the main thread forks
again and again. Each forked child compiles a grammar of its own, fills a mask and a batch,
and exits 0; a child that hangs on a lock inherited in the locked state is killed by its
alarm. Prints one line, "forks=N ok=K hung=H failed=F load_errors=[...]", and exits 0 only if every child did.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import warnings

import numpy as np

import xg2_plugin as xg
from xg2_test_support import hf_tokenizer_info

FORKS = int(sys.argv[1]) if len(sys.argv) > 1 else 60
CHILD_ALARM_S = 30  # a generous hang timeout: a healthy child needs a fraction of a second
THREADS = 3
FORMATS = ["date-time", "date", "time", "email", "uri", "uuid", "ipv4", "ipv6", "duration",
           "uri-reference", "json-pointer"]

warnings.simplefilter("ignore", DeprecationWarning)  # os.fork() in a multi-threaded process
compiler = xg.GrammarCompiler(hf_tokenizer_info("gpt2"), max_threads=2)
vocab_size = compiler.tokenizer_info.vocab_size
stop = threading.Event()
errors: list[BaseException] = []


def schema(tag: str, i: int) -> dict:
    fmt = FORMATS[i % len(FORMATS)]
    return {"type": "object", "properties": {
        f"{tag}_{i}": {"type": "string", "format": fmt},
        f"n{i}": {"type": "string", "maxLength": 8 + i % 40},
        "list": {"type": "array", "items": {"type": "integer", "minimum": i}}}, "required": [f"{tag}_{i}"]}


def load(tag: str) -> None:
    bitmask = np.zeros(xg.get_bitmask_shape(2, vocab_size), dtype=np.int32)
    try:
        load_loop(tag, bitmask)
    except BaseException as error:  # reported by the main thread: the load must not stop early
        errors.append(error)


def load_loop(tag: str, bitmask: np.ndarray) -> None:
    i = 0
    while not stop.is_set():
        grammar = compiler.compile_json_schema(schema(tag, i))
        matchers = [xg.GrammarMatcher(grammar), xg.GrammarMatcher(grammar)]
        matchers[1].accept_string('{"')
        xg.batch_fill_next_token_bitmask(matchers, bitmask, max_threads=2)
        i += 1


def child(n: int) -> None:
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # kills the child even inside a native wait
    signal.alarm(CHILD_ALARM_S)
    grammar = compiler.compile_json_schema(schema(f"child{n}", 1000 + n))
    matcher = xg.GrammarMatcher(grammar)
    bitmask = np.zeros(xg.get_bitmask_shape(2, vocab_size), dtype=np.int32)
    matcher.fill_next_token_bitmask(bitmask)
    other = xg.GrammarMatcher(compiler.compile_grammar(f'root ::= "c{n}" [0-9]+'))
    xg.batch_fill_next_token_bitmask([matcher, other], bitmask, max_threads=2)
    ok = matcher.accept_string('{"child') and other.accept_string(f"c{n}7")
    os._exit(0 if ok else 3)


threads = [threading.Thread(target=load, args=(f"t{k}",), daemon=True) for k in range(THREADS)]
for t in threads:
    t.start()
ok = hung = failed = 0
for n in range(FORKS):
    pid = os.fork()
    if pid == 0:
        try:
            child(n)
        finally:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
        ok += 1
    elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        hung += 1
    else:
        failed += 1
    if ok != n + 1:
        break  # one hung or failed child is the finding; the rest would only repeat it
stop.set()
for t in threads:
    t.join()
print(f"forks={n + 1} ok={ok} hung={hung} failed={failed} load_errors={errors!r}", flush=True)
sys.exit(0 if ok == FORKS and not errors else 1)
