"""JSON Schema compiles under an adapter's leniency switch (``XG2_LENIENT``, off by default).

Exact first: a schema compiles as written or fails with the engine's typed error. With the
switch on, a schema that fails only because of keywords the engine refuses
(``UnsupportedSchemaError``) compiles again with those keywords ignored, and the server log
gets one warning for that schema (naming what was refused) instead of the request failing.
Every other error (invalid JSON, a malformed schema, a limit) still fails the request.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from typing import Any, Optional

from xg2_plugin import CompiledGrammar, GrammarCompiler
from xg2_plugin.exceptions import UnsupportedSchemaError

from .options import JsonLayout

__all__ = ["LenientSchemas"]

_REMEMBERED_SCHEMAS = 4096


class LenientSchemas:
    """Compiles JSON Schemas exactly, or leniently with one log warning per schema.

    Args:
        lenient: the operator's switch; False: exact-or-refuse.
        logger: where the one warning per lenient schema goes (None: no warning).
    """

    def __init__(self, lenient: bool, logger: Optional[logging.Logger]) -> None:
        self.lenient = lenient
        self._logger = logger
        self._lock = threading.Lock()
        # Digests of schemas known to need leniency (their lenient grammar is in the
        # compiler's cache): no exact attempt and no second warning for them.
        self._known: "OrderedDict[bytes, None]" = OrderedDict()

    def compile(
        self, compiler: GrammarCompiler, schema: str, layout: JsonLayout, *, strict_mode: bool = True, **kwargs: Any
    ) -> CompiledGrammar:
        """``compiler.compile_json_schema(schema, ...)`` with ``layout``'s whitespace.

        Raises:
            The engine's errors; ``UnsupportedSchemaError`` only when the switch is off.
        """
        options = {**layout.compile_kwargs(), "strict_mode": strict_mode, **kwargs}
        if not self.lenient:
            return compiler.compile_json_schema(schema, **options)
        digest = hashlib.blake2b(repr((schema, sorted(options.items()))).encode(), digest_size=16).digest()
        with self._lock:
            known = digest in self._known
            if known:
                self._known.move_to_end(digest)
        if not known:
            try:
                return compiler.compile_json_schema(schema, **options)
            except UnsupportedSchemaError as error:
                if self._logger is not None:
                    self._logger.warning(
                        "xg2: JSON Schema compiled leniently (XG2_LENIENT=1), refused keywords ignored: %s; "
                        "schema %.200s", error, schema,
                    )
            with self._lock:
                self._known[digest] = None
                while len(self._known) > _REMEMBERED_SCHEMAS:
                    self._known.popitem(last=False)
        return compiler.compile_json_schema(schema, lenient=True, **options)
