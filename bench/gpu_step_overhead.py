"""Grammar work per decoding step next to a GPU forward pass (needs a CUDA GPU).

The claim the product rests on is that the mask costs far less than the forward pass it rides
along with. This measures both on one machine, per batch size:

* **forward**: one decode step (one new token per sequence, ``--context`` tokens already in the
  KV cache) of a model with Llama-3.1-8B's shape and random bf16 weights, run eagerly by
  transformers. Eager transformers is slower than a serving engine with CUDA graphs, so the
  report also gives the **weight-streaming floor**: the model's bytes divided by the measured
  device copy bandwidth, a lower bound on any engine's decode step at that batch size;
* **grammar**: for each engine (ours, xgrammar, llguidance, through the benchmark harness's
  adapters), ``batch`` matchers over JSONSchemaBench schemas, teacher-forced along their valid
  instances (a matcher restarts at the end of its instance, as in ``run.py``'s batch task).
  Per step: the batch fill with ``--threads`` threads (timed), the bitmask's copy to the GPU and
  its application to the logits with xgrammar's CUDA kernel (the one vLLM calls; timed, same for
  every engine), and each matcher accepting its next token (timed).

Medians and p99 over the steps; the report lists the grammar work as a fraction of the forward
pass and of its floor. A serving engine overlaps the fill with the forward pass, so the fraction
is an upper bound on the added latency.

    python bench/gpu_step_overhead.py --per-category 3 --batch-sizes 1,16,64,128 --threads 16
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from harness.corpus import list_schemas, load_schema_item, serialize_instance, stratified_sample  # noqa: E402
from harness.engines import make_engine  # noqa: E402
from harness.vocab import load_vocab  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]


def build_model(torch: Any, vocab_size: int) -> Any:
    """Llama-3.1-8B's shape with random bf16 weights, on the GPU."""
    import transformers

    config = transformers.LlamaConfig(
        hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, vocab_size=vocab_size, max_position_embeddings=8192, rope_theta=500000.0,
    )
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(config)
    torch.set_default_dtype(torch.float32)
    return model.eval()


def copy_bandwidth(torch: Any) -> float:
    """Device-to-device copy bandwidth in bytes/s (bytes read plus written)."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    torch.cuda.synchronize()
    return 2 * src.numel() * 10 / (time.perf_counter() - t0)


def forward_step_ms(torch: Any, model: Any, batch: int, context: int, steps: int) -> list[float]:
    """Wall time of one-token decode steps with ``context`` tokens already cached."""
    vocab = model.config.vocab_size
    with torch.inference_mode():
        prompt = torch.randint(0, vocab, (batch, context), device="cuda")
        out = model(input_ids=prompt, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        times = []
        for i in range(steps + 3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            out = model(input_ids=token, past_key_values=cache, use_cache=True)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
            torch.cuda.synchronize()
            if i >= 3:
                times.append((time.perf_counter() - t0) * 1e3)
        del cache, out
    torch.cuda.empty_cache()
    return times


def usable_items(engines: dict[str, Any], vocab: Any, names: list[str]) -> list[dict[str, Any]]:
    """Schemas every engine compiles and whose first valid instance every engine accepts."""
    items = []
    for name in names:
        item = load_schema_item(name)
        if not item.valid:
            continue
        tokens = vocab.encode(serialize_instance(item.valid[0], item.schema))
        compiled = {}
        try:
            for engine_name, engine in engines.items():
                compiled[engine_name] = engine.compile_json_schema(item.schema_text)
                matcher = engine.new_matcher(compiled[engine_name])
                if not all(engine.accept(matcher, t) for t in tokens):
                    raise ValueError("instance rejected")
        except Exception:
            continue
        items.append({"name": name, "tokens": tokens, "compiled": compiled})
    return items


def grammar_step_times(torch: Any, engine: Any, engine_name: str, items: list[dict[str, Any]], batch: int,
                       threads: int, steps: int, apply_kernel: Callable[..., None], vocab_size: int) -> dict[str, list[float]]:
    """Per-step fill, copy+apply and accept times (ms) for ``batch`` teacher-forced matchers."""
    filler = engine.batch_filler(threads)
    matchers, positions, streams = [], [], []
    for i in range(batch):
        entry = items[i % len(items)]
        matcher = engine.new_matcher(entry["compiled"][engine_name])
        start = (i * 7919) % len(entry["tokens"])
        for token in entry["tokens"][:start]:
            engine.accept(matcher, token)
        matchers.append(matcher)
        positions.append(start)
        streams.append(entry["tokens"])
    bitmask = torch.full((batch, (vocab_size + 31) // 32), -1, dtype=torch.int32).pin_memory()
    logits = torch.randn(batch, vocab_size, device="cuda", dtype=torch.float32)
    fill_ms, apply_ms, accept_ms = [], [], []
    for step in range(steps + 2):
        t0 = time.perf_counter()
        filler(matchers, bitmask)
        t1 = time.perf_counter()
        apply_kernel(logits, bitmask.to("cuda", non_blocking=True))
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        for i, matcher in enumerate(matchers):
            if positions[i] < len(streams[i]) and engine.accept(matcher, streams[i][positions[i]]):
                positions[i] += 1
            else:
                engine.reset(matcher)
                positions[i] = 0
        t3 = time.perf_counter()
        if step >= 2:  # the first two steps warm thread pools and allocators
            fill_ms.append((t1 - t0) * 1e3)
            apply_ms.append((t2 - t1) * 1e3)
            accept_ms.append((t3 - t2) * 1e3)
    return {"fill": fill_ms, "apply": apply_ms, "accept": accept_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokenizer", default="llama3.1")
    parser.add_argument("--engines", default="ours,xgrammar,llguidance")
    parser.add_argument("--per-category", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-sizes", default="1,16,64,128")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--steps", type=int, default=100, help="grammar steps per batch size and engine")
    parser.add_argument("--forward-steps", type=int, default=20)
    parser.add_argument("--context", type=int, default=512, help="tokens in the KV cache before the timed steps")
    parser.add_argument("--name", default="gpu-step-overhead")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        sys.exit("gpu_step_overhead.py needs a CUDA GPU")
    from xgrammar import apply_token_bitmask_inplace as xgrammar_apply

    vocab = load_vocab(args.tokenizer)
    engines = {name: make_engine(name, vocab) for name in args.engines.split(",")}
    names = stratified_sample(list_schemas(), args.per_category, args.seed)
    items = usable_items(engines, vocab, names)
    print(f"{len(items)} of {len(names)} schemas usable by every engine", flush=True)
    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]

    model = build_model(torch, vocab.vocab_size)
    model_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    bandwidth = copy_bandwidth(torch)
    rows = []
    for batch in batch_sizes:
        forward = forward_step_ms(torch, model, batch, args.context, args.forward_steps)
        row: dict[str, Any] = {"batch": batch, "forward_ms": statistics.median(forward),
                               "floor_ms": model_bytes / bandwidth * 1e3, "engines": {}}
        for engine_name, engine in engines.items():
            times = grammar_step_times(torch, engine, engine_name, items, batch, args.threads, args.steps,
                                       xgrammar_apply, vocab.vocab_size)
            row["engines"][engine_name] = {
                f"{part}_{stat}": (statistics.median(values) if stat == "p50" else percentile(values, 0.99))
                for part, values in times.items() for stat in ("p50", "p99")
            }
        rows.append(row)
        print(json.dumps(row), flush=True)

    device = torch.cuda.get_device_name(0)
    lines = [
        f"# Grammar work per decode step next to the forward pass ({device})",
        "",
        f"Command: `python bench/gpu_step_overhead.py {' '.join(sys.argv[1:])}`. Host: {platform.node()}, "
        f"{os.cpu_count()} CPUs; {len(items)} JSONSchemaBench schemas ({args.per_category} per category, seed "
        f"{args.seed}) that every engine compiles and accepts, tokenizer {args.tokenizer}, fill threads "
        f"{args.threads}, {args.steps} steps per cell.",
        "",
        f"Forward: Llama-3.1-8B shape, random bf16 weights ({model_bytes / 2**30:.1f} GiB), eager transformers, "
        f"{args.context} tokens cached, median of {args.forward_steps} steps. Floor: weights ÷ device copy "
        f"bandwidth ({bandwidth / 1e12:.2f} TB/s), a lower bound for any engine's decode step.",
        "",
        "Grammar columns are milliseconds per step (p50 / p99): the batch fill, the copy to the GPU plus "
        "xgrammar's apply kernel, and every matcher accepting its token. `share` is (fill + accept) p50 "
        "as a fraction of the forward step and of its floor.",
        "",
        "| batch | forward ms | floor ms | engine | fill p50 / p99 | copy+apply p50 | accept p50 | share of forward | share of floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for engine_name, t in row["engines"].items():
            work = t["fill_p50"] + t["accept_p50"]
            lines.append(
                f"| {row['batch']} | {row['forward_ms']:.2f} | {row['floor_ms']:.2f} | {engine_name} | "
                f"{t['fill_p50']:.3f} / {t['fill_p99']:.3f} | {t['apply_p50']:.3f} | {t['accept_p50']:.3f} | "
                f"{work / row['forward_ms']:.1%} | {work / row['floor_ms']:.1%} |"
            )
    out = BENCH_DIR / "results" / f"{args.name}.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (BENCH_DIR / "results" / f"{args.name}.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
