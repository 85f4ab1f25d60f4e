"""The demos' embedded default: the project's own tokenizer, built offline, and ``xg2-demo`` on it.

These run with no test data at all (XG2_DATA_DIR unset), as a user's fresh clone does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

tokenizers = pytest.importorskip("tokenizers")

from xg2_plugin import GrammarCompiler, GrammarMatcher, TokenizerInfo, cli  # noqa: E402
from xg2_plugin.demo_tokenizer import CHAT_TEMPLATE, EOS_TOKEN, SPECIAL_TOKENS, build_demo_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_demo_tokenizer(tmp_path_factory.mktemp("demo-tokenizer"))


def test_build_is_deterministic_and_reused(demo_dir: Path, tmp_path: Path) -> None:
    again = build_demo_tokenizer(tmp_path / "again")
    assert (again / "tokenizer.json").read_bytes() == (demo_dir / "tokenizer.json").read_bytes()
    stamp = again / "xg2_demo_tokenizer.json"
    before = stamp.stat().st_mtime_ns
    assert build_demo_tokenizer(again) == again
    assert stamp.stat().st_mtime_ns == before


def test_every_byte_is_spelled_and_specials_come_first(demo_dir: Path) -> None:
    tokenizer = tokenizers.Tokenizer.from_file(str(demo_dir / "tokenizer.json"))
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2]
    text = bytes(range(1, 128)).decode("ascii") + "é€😀 {\"a\": [1, 2.5e-3]}\n"
    assert tokenizer.decode(tokenizer.encode(text).ids) == text
    info = TokenizerInfo.from_huggingface(tokenizer)
    matcher = GrammarMatcher(GrammarCompiler(info).compile_regex(r"[0-9]{4}-[a-z]+"))
    assert matcher.accept_string("2024-abc") and not matcher.accept_string("X")


def test_chat_template_renders_the_pythonic_tool_call_format(demo_dir: Path) -> None:
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(demo_dir))
    assert tokenizer.eos_token == EOS_TOKEN and tokenizer.chat_template == CHAT_TEMPLATE
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
        {"role": "tool", "content": "18 C"},
    ]
    text = tokenizer.apply_chat_template(messages, tools=[tool], tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|im_start|>system\nYou can call these functions:\n" + json.dumps(tool) + "\n"
        'To call them, answer with a Python list of calls only, e.g. [name(arg="value")].<|im_end|>\n'
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
        '<|im_start|>assistant\n[get_weather(city="Paris", unit="celsius")]<|im_end|>\n'
        "<|im_start|>tool\n18 C<|im_end|>\n<|im_start|>assistant\n"
    )


def test_xg2_demo_runs_with_no_test_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("XG2_DATA_DIR", raising=False)
    monkeypatch.setenv("XG2_DEMO_DIR", str(tmp_path))
    assert cli.main(["--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("schema validation: valid") == 2


def test_xg2_demo_names_a_missing_tokenizer(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no tokenizer.json there"):
        cli.main(["--tokenizer", str(tmp_path / "absent")])
