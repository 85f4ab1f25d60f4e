"""Serve a model with vLLM and the xg2 backend, send structured requests, check the answers.

Run by ``scripts/demo.sh`` (``python -m xg2_plugin.adapters.vllm.demo``). By default it builds a
tiny random-weights Llama next to the Llama-3.1 tokenizer from the data directory, so it runs
offline on a CPU; ``--model NAME`` serves a real model instead (network and a GPU).

It starts vLLM's OpenAI-compatible server with ``--structured-outputs-config.backend xg2``,
sends a JSON-schema, a regex and a tool-call request, and prints each output, whether it
validates, and the grammar time per token (mask fill plus token acceptance, measured by
replaying the returned token ids through the same engine).
"""

from __future__ import annotations

import argparse
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


@dataclass
class Result:
    """One request's outcome."""

    name: str
    text: str
    token_ids: list[int]
    valid: bool
    detail: str
    seconds: float


def default_data_dir() -> Path:
    """$XG2_DATA_DIR, else ../shared/data next to the working directory (the checkout)."""
    return Path(os.environ.get("XG2_DATA_DIR", Path.cwd().parent / "shared" / "data"))


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(model: str, port: int, log_path: Path, cpu: bool, extra: Sequence[str]) -> subprocess.Popen:
    """Starts ``vllm.entrypoints.openai.api_server`` with the xg2 backend."""
    command = [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model, "--served-model-name", "demo",
        "--host", "127.0.0.1", "--port", str(port),
        "--structured-outputs-config.backend", BACKEND_NAME,
        "--structured-outputs-config.disable_any_whitespace", "true",
        "--enable-auto-tool-choice", "--tool-call-parser", "pythonic",
    ]
    env = dict(os.environ)
    if cpu:
        command += ["--dtype", "float32", "--max-model-len", "1024", "--max-num-seqs", "8", "--enforce-eager",
                    "--distributed-executor-backend", "uni"]
        for name, value in {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "OMP_NUM_THREADS": "1",
                            "OMP_WAIT_POLICY": "PASSIVE", "VLLM_NO_USAGE_STATS": "1"}.items():
            env.setdefault(name, value)
    command += list(extra)
    with open(log_path, "wb") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)


def wait_healthy(port: int, process: subprocess.Popen, log_path: Path, timeout_s: float) -> float:
    """Waits for ``/health``; returns the seconds it took. Exits with the log tail on failure."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if process.poll() is not None:
            raise SystemExit(f"vLLM exited with {process.returncode}; log tail:\n{log_path.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as response:
                if response.status == 200:
                    return time.monotonic() - start
        except OSError:
            pass
        time.sleep(2)
    raise SystemExit(f"vLLM not healthy after {timeout_s:.0f} s; log tail:\n{log_path.read_text()[-3000:]}")


def run_requests(client: Any, max_tokens: int) -> list[Result]:
    """Sends the three requests and validates each answer."""
    import jsonschema

    results = []
    messages = [{"role": "user", "content": "Describe a city as JSON."}]
    start = time.perf_counter()
    response = client.chat.completions.create(
        model="demo", messages=messages, max_tokens=max_tokens, temperature=1.0,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY_SCHEMA}},
        extra_body={"return_token_ids": True},
    )
    choice = response.choices[0]
    text = choice.message.content or ""
    try:
        jsonschema.validate(json.loads(text), CITY_SCHEMA)
        valid, detail = True, "valid JSON, matches the schema"
    except (ValueError, jsonschema.ValidationError) as error:
        valid, detail = False, f"invalid: {str(error).splitlines()[0]}"
    results.append(Result("json_schema", text, list(choice.token_ids or []), valid, detail, time.perf_counter() - start))

    start = time.perf_counter()
    completion = client.completions.create(
        model="demo", prompt="A date: ", max_tokens=max_tokens, temperature=1.0,
        extra_body={"structured_outputs": {"regex": DATE_REGEX}, "return_token_ids": True},
    )
    text = completion.choices[0].text
    valid = re.fullmatch(DATE_REGEX, text) is not None
    results.append(Result("regex", text, list(completion.choices[0].token_ids or []), valid,
                          "full match" if valid else "no full match", time.perf_counter() - start))

    start = time.perf_counter()
    response = client.chat.completions.create(
        model="demo", messages=[{"role": "user", "content": "Weather in Paris?"}], max_tokens=max_tokens,
        temperature=1.0, tools=[WEATHER_TOOL], tool_choice={"type": "function", "function": {"name": "get_weather"}},
        extra_body={"return_token_ids": True},
    )
    choice = response.choices[0]
    calls = choice.message.tool_calls or []
    text = json.dumps([{"name": c.function.name, "arguments": c.function.arguments} for c in calls])
    try:
        (call,) = calls
        jsonschema.validate(json.loads(call.function.arguments), WEATHER_TOOL["function"]["parameters"])
        valid, detail = call.function.name == "get_weather", "one get_weather call, arguments match its schema"
    except (ValueError, jsonschema.ValidationError) as error:
        valid, detail = False, f"invalid tool call: {str(error).splitlines()[0]}"
    results.append(Result("tool_call", text, list(choice.token_ids or []), valid, detail, time.perf_counter() - start))
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
    parser.add_argument("--tokenizer", default="llama3.1", help="tokenizer folder under tokenizers/hf/ for the tiny model")
    parser.add_argument("--data-dir", type=Path, default=None, help="data directory (default $XG2_DATA_DIR)")
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--startup-timeout", type=float, default=600.0)
    parser.add_argument("vllm_args", nargs="*", help="extra arguments for the vLLM server (after --)")
    args = parser.parse_args(argv)

    import openai
    import transformers

    from .tiny_model import build_tiny_llama

    cpu = args.model is None
    if cpu:
        data_dir = args.data_dir or default_data_dir()
        model = str(build_tiny_llama(data_dir / "tokenizers" / "hf" / args.tokenizer,
                                     Path(tempfile.gettempdir()) / "xg2-vllm-tiny-models" / args.tokenizer))
        print(f"model: tiny random-weights Llama with the {args.tokenizer} tokenizer ({model})")
    else:
        model = args.model
        print(f"model: {model}")

    port = free_port()
    log_path = Path(tempfile.gettempdir()) / f"xg2-vllm-demo-{port}.log"
    print(f"starting vLLM on 127.0.0.1:{port} with --structured-outputs-config.backend {BACKEND_NAME} (log: {log_path})")
    process = start_server(model, port, log_path, cpu, args.vllm_args)
    try:
        print(f"server ready in {wait_healthy(port, process, log_path, args.startup_timeout):.0f} s\n")
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", timeout=300, max_retries=0)
        results = run_requests(client, args.max_tokens)
    finally:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()

    tokenizer = transformers.AutoTokenizer.from_pretrained(model)
    info = TokenizerInfo.from_huggingface(tokenizer, vocab_size=transformers.AutoConfig.from_pretrained(model).vocab_size)
    compile_fns: dict[str, Callable[[GrammarCompiler], Any]] = {
        "json_schema": lambda c: c.compile_json_schema(CITY_SCHEMA, any_whitespace=False, separators=(",", ":")),
        "regex": lambda c: c.compile_regex(DATE_REGEX),
        "tool_call": lambda c: c.compile_json_schema(
            WEATHER_TOOL["function"]["parameters"], any_whitespace=False, separators=(",", ":")
        ),
    }
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
