"""The options an operator or a request sets on the engine's JSON, shared by both adapters.

* :class:`AdapterSettings`: process-wide settings read from the environment when a backend
  starts (engines have no passthrough for a backend's own options):

  ``XG2_MAX_WHITESPACE``      cap on each JSON whitespace gap (characters); unset: no cap.
  ``XG2_COMPILE_TIMEOUT_S``   per-compile wall-clock limit, default 30; ``0`` or ``none``: none.
  ``XG2_LENIENT``             ``1``: JSON Schema keywords the engine refuses are ignored, with one
                              warning per schema in the log, instead of failing the request.
  ``XG2_STATS_LOG_INTERVAL_S`` seconds between grammar-statistics log lines, default 60; ``0``: none.

* :func:`whitespace_from_pattern`: a whitespace regex (vLLM's ``whitespace_pattern``, SGLang's
  ``--constrained-json-whitespace-pattern``) as the JSON layout it denotes, exactly, or a
  ``ValueError`` for a pattern the engine cannot enforce as written.
* :func:`cap_tag_whitespace`: the cap applied to every JSON format inside a structural tag.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

__all__ = ["AdapterSettings", "JsonLayout", "cap_tag_whitespace", "whitespace_from_pattern"]

DEFAULT_COMPILE_TIMEOUT_S = 30.0
"""A compile past this fails its request instead of holding a compile thread indefinitely
(SGLang's scheduler gives up on a grammar after about 50 s; vLLM never does)."""

DEFAULT_STATS_LOG_INTERVAL_S = 60.0

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


@dataclass(frozen=True)
class JsonLayout:
    """The whitespace one request's JSON may contain.

    Attributes:
        any_whitespace: whitespace (space, tab, line feed, carriage return) in every gap
            between JSON tokens; False: none at all (``,`` and ``:`` without spaces).
        max_whitespace: cap on the characters of one gap (None: no cap); only with
            ``any_whitespace``.
    """

    any_whitespace: bool = True
    max_whitespace: Optional[int] = None

    def capped(self, cap: Optional[int]) -> "JsonLayout":
        """This layout with at most ``cap`` characters per gap (None: unchanged)."""
        if cap is None or not self.any_whitespace:
            return self
        limit = cap if self.max_whitespace is None else min(cap, self.max_whitespace)
        return JsonLayout(True, limit)

    def compile_kwargs(self) -> dict[str, Any]:
        """The arguments of ``GrammarCompiler.compile_json_schema`` for this layout."""
        if not self.any_whitespace:
            return {"any_whitespace": False, "separators": (",", ":")}
        return {"any_whitespace": True, "max_whitespace": self.max_whitespace}


# One JSON whitespace character as a regex may spell it, outside a class or inside one.
_JSON_SPACE = {" ": " ", "\\x20": " ", "\t": "\t", "\\t": "\t", "\\x09": "\t", "\n": "\n", "\\n": "\n",
               "\\x0a": "\n", "\\x0A": "\n", "\r": "\r", "\\r": "\r", "\\x0d": "\r", "\\x0D": "\r"}
_CLASS_ITEM = re.compile(r"\\x[0-9a-fA-F]{2}|\\[tnr]|[ \t\n\r]")
_PATTERN = re.compile(r"\[(?P<items>[^\]]*)\](?P<quantifier>\*|\?|\{0\}|\{0,(?P<max>[0-9]{1,9})\})")


def whitespace_from_pattern(pattern: Any, what: str = "whitespace_pattern") -> JsonLayout:
    """The JSON layout a whitespace regex denotes, when the engine can enforce it exactly.

    Every gap between JSON tokens then takes any string the pattern matches. Enforced: the
    empty pattern (no whitespace), and a character class holding exactly the four JSON
    whitespace characters (space, ``\\t``, ``\\n``, ``\\r``, in any order and spelling) with
    ``*`` (no cap), ``?`` or ``{0,n}`` (at most n characters). Anything else (``\\s``, which also
    matches characters JSON forbids; a class of fewer characters; ``+`` or ``{m,n}`` with m > 0,
    which require whitespace) raises instead of being approximated.

    Raises:
        TypeError: ``pattern`` is not a str.
        ValueError: a pattern outside the forms above; the message names ``what``.
    """
    if not isinstance(pattern, str):
        raise TypeError(f"{what} must be a str, got {type(pattern).__name__}")
    if pattern == "":
        return JsonLayout(any_whitespace=False)
    match = _PATTERN.fullmatch(pattern)
    if match is not None:
        items = _CLASS_ITEM.findall(match["items"])
        if "".join(items) == match["items"] and {_JSON_SPACE[item] for item in items} == set(" \t\n\r"):
            quantifier = match["quantifier"]
            if quantifier == "*":
                return JsonLayout(True, None)
            limit = 1 if quantifier == "?" else int(match["max"] or 0)
            return JsonLayout(True, limit) if limit > 0 else JsonLayout(any_whitespace=False)
    raise ValueError(
        f"{what} {pattern!r} is not one the xg2 engine enforces exactly: it takes '' (no whitespace) "
        r"or a class of the four JSON whitespace characters followed by * or {0,n}, e.g. '[ \t\n\r]*' "
        r"or '[ \t\n\r]{0,4}'"
    )


def cap_tag_whitespace(tag: Any, cap: Optional[int]) -> Any:
    """Sets ``max_whitespace_cnt`` to ``cap`` on every JSON format of a structural tag (in place).

    A format's own smaller ``max_whitespace_cnt`` is kept. Tags in the legacy
    ``structures``/``triggers`` form have no such field and are returned unchanged.
    """
    if cap is None:
        return tag
    stack = [tag]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in ("json_schema", "qwen_xml_parameter"):
                own = node.get("max_whitespace_cnt")
                node["max_whitespace_cnt"] = cap if not isinstance(own, int) or isinstance(own, bool) else min(own, cap)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return tag


def _flag(environ: Mapping[str, str], name: str) -> bool:
    text = environ.get(name, "").strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{name} must be 1 or 0 (true/false), got {environ[name]!r}")


def _seconds(environ: Mapping[str, str], name: str, default: float) -> Optional[float]:
    text = environ.get(name)
    if text is None or text.strip() == "":
        return default
    if text.strip().lower() in ("0", "none", "off"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive number of seconds, or 0/none for no limit; got {text!r}")
    return value


def _count(environ: Mapping[str, str], name: str) -> Optional[int]:
    text = environ.get(name)
    if text is None or text.strip() == "":
        return None
    if not text.strip().isdigit():
        raise ValueError(f"{name} must be a whole number of characters (0 or more), got {text!r}")
    return int(text)


@dataclass(frozen=True)
class AdapterSettings:
    """What an operator sets for a backend through the environment (see the module doc).

    Attributes:
        max_whitespace: cap on each JSON whitespace gap of every request (None: no cap).
        compile_timeout_s: per-compile limit in seconds (None: none).
        lenient: compile JSON Schemas leniently, logging what was ignored.
        stats_log_interval_s: seconds between statistics log lines (None: no log lines).
    """

    max_whitespace: Optional[int] = None
    compile_timeout_s: Optional[float] = DEFAULT_COMPILE_TIMEOUT_S
    lenient: bool = False
    stats_log_interval_s: Optional[float] = DEFAULT_STATS_LOG_INTERVAL_S

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "AdapterSettings":
        """Reads the ``XG2_*`` variables.

        Raises:
            ValueError: a variable is set to a value it does not take (the message names it),
                so a misconfigured server fails to start rather than run without the setting.
        """
        env = os.environ if environ is None else environ
        return cls(
            max_whitespace=_count(env, "XG2_MAX_WHITESPACE"),
            compile_timeout_s=_seconds(env, "XG2_COMPILE_TIMEOUT_S", DEFAULT_COMPILE_TIMEOUT_S),
            lenient=_flag(env, "XG2_LENIENT"),
            stats_log_interval_s=_seconds(env, "XG2_STATS_LOG_INTERVAL_S", DEFAULT_STATS_LOG_INTERVAL_S),
        )
