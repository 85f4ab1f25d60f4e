r"""Model presets: the structural tag of a model family's tool-call and reasoning format.

``get_model_structural_tag(model, tools, tool_choice, reasoning, ...)`` takes the arguments of
xgrammar's function of the same name (Chat Completions function tools, compact builtin tools,
every ``tool_choice`` form, ``parallel_tool_calls``, ``any_order``, ``max_whitespace_cnt``,
``exclude_special_tokens``) and returns a :class:`~xg2_plugin.structural_tag.StructuralTag`.
``register_model_structural_tag(name)`` adds a family; ``model_families()`` lists them. Special
tokens written in these strings (``<|channel|>``, ``<｜tool▁sep｜>``, ``[TOOL_CALLS]``...) are
matched as tokens by ``compile_structural_tag`` when the tokenizer marks them special.

xgrammar's families, under its names (``families.py``; each the same language as xgrammar
0.2.8's tag for the same arguments, except where noted):

=================  ==========================================================================
``llama``          Llama 3.x ``{"name": NAME, "parameters": ARGS}`` anywhere in the text
``qwen_3``         Qwen 3 ``<tool_call>\n{"name", "arguments"}\n</tool_call>``; prompt opens ``<think>``
``qwen_3_coder``   Qwen3-Coder ``<tool_call>\n<function=NAME>\n`` + qwen_xml parameters
``qwen_3_5``       Qwen 3.5: the Qwen3-Coder calls with a ``<think>`` block
``mimo``           MiMo ``<tool_call><function=NAME>`` + qwen_xml; the model writes ``<think>``
``glm_4_7``        GLM 4.7 ``<tool_call>NAME`` + glm_xml ``</tool_call>``
``exaone``         EXAONE 4.0 ``<tool_call>{"name", "arguments"}</tool_call>``
``kimi``           Kimi K2 / K2.5 ``<|tool_calls_section_begin|>`` ... ``functions.NAME:N``
``kimi_k3``        Kimi K3 ``<|open|>``/``<|close|>`` blocks, kimi_k3_xml arguments
``deepseek_r1``    DeepSeek R1 / V3: ``function<｜tool▁sep｜>NAME`` + a json code block
``deepseek_v3_1``  DeepSeek V3.1 ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>``
``deepseek_v3_2``  DeepSeek V3.2 DSML ``function_calls`` / ``invoke``, deepseek_xml arguments
``deepseek_v4``    DeepSeek V4 DSML ``tool_calls`` / ``invoke``, deepseek_xml arguments
``deepseek_v4_1``  DeepSeek V4.1 DSML `` calls`` / `` invoke``, deepseek_v4_1_xml arguments
``minimax``        MiniMax M2 ``<minimax:tool_call>`` / ``<invoke name=NAME>``, minimax_xml
``minimax_m3``     MiniMax M3 ``]<]minimax[>[`` namespaced calls, minimax_m3_xml; ``<mm:think>``
``harmony``        gpt-oss (OpenAI Harmony channels; builtin tools as ``to=NAME code``)
``cohere``         Cohere Command ``<cofl:tool_calls>``, cohere_xml; ``<|START_THINKING|>``
=================  ==========================================================================

Our own families (``legacy.py``: Mistral and Llama's ``<function=>`` form, which xgrammar does
not register, and the names this package used before, each checked against a chat template):

===================  ========================================================================
``llama3_function``  Llama 3.1 ``<function=NAME>{...}</function>``
``mistral``          ``[TOOL_CALLS]NAME[ARGS]{...}`` (Devstral / Mistral Small)
``llama3_json``      like ``llama`` but the whole reply is one call or text without a call
``qwen``             like ``qwen_3`` but the model writes ``<think>`` and 0-2 line breaks follow
                     ``</think>`` (Qwen 2.5 / Qwen3-0.6B / Hermes templates)
``qwen3_coder``      like ``qwen_3_coder``; no reasoning block ("enabled" is an error)
``deepseek_v3``      like ``deepseek_r1``; 0-2 line breaks after ``</think>`` (R1 distills)
``kimi_k2``          like ``kimi``; the model writes ``<think>`` (Kimi-K2-Thinking)
``glm4``             GLM 4.5/4.6: ``<tool_call>NAME\n<arg_key>..`` with line breaks, ``\n<think>``
``glm4_7``           GLM 4.7 as GLM-4.7-Flash.jinja renders it (optional line breaks)
===================  ========================================================================

Deliberate differences from xgrammar 0.2.8:

- ``harmony`` also accepts ``<|channel|>commentary to=functions.NAME <|constrain|>json`` with
  the space before ``<|constrain|>`` (OpenAI's documented form, the one gpt-oss writes);
  xgrammar's three head forms are kept.

Reasoning: ``"enabled"`` requires the family's reasoning block (where the prompt opens it, the
output is the reasoning text up to its end tag), ``"auto"`` allows a whole block or none,
``"disabled"`` forbids it. Tool choice: ``"auto"`` text with any number of calls, ``"none"``
text only, ``"required"`` at least one call, a named or builtin tool exactly that call.
"""

from __future__ import annotations

from . import families as _families  # noqa: F401  (registers xgrammar's families)
from . import legacy as _legacy  # noqa: F401  (registers ours)
from .registry import get_model_structural_tag, model_families, register_model_structural_tag
from .tools import Tool, normalize_tools

# The families this package registers itself (user registrations are in model_families()).
MODEL_FAMILIES = tuple(model_families())

__all__ = ["MODEL_FAMILIES", "Tool", "get_model_structural_tag", "model_families", "normalize_tools",
           "register_model_structural_tag"]
