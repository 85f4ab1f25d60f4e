"""A persistent compile cache: compiled grammars as files in a directory, shared by processes.

Opt in with ``GrammarCompiler(info, cache_dir=...)`` or the environment variable
``XG2_CACHE_DIR`` (bound: ``cache_dir_limit_bytes`` / ``XG2_CACHE_DIR_LIMIT_BYTES``, 1 GiB by
default). A restarted server, or another data-parallel worker, then reads a grammar compiled
before instead of compiling it again.

* Keys are content addresses: a SHA-256 over the engine version, the native module's own
  bytes (a rebuilt engine never reads its predecessor's files), the tokenizer fingerprint, the
  compile request (kind, text and every option) and the compiler's settings that shape a
  grammar (limits, repetition compression).
* Writes go to a temporary file in the same directory, then ``os.replace`` onto the key's
  name: a reader sees the whole old file, the whole new one, or none, never a torn one; two
  processes writing the same key write the same grammar, and the last rename wins.
* Each file is a grammar blob (xg2_plugin/serialization.py) with its own checksum, format and
  engine version and tokenizer fingerprint: a damaged or foreign file is refused by the
  reader, removed, and the grammar compiled again.
* Bounded in bytes: after a write, the oldest files by modification time go until the
  directory fits (a hit refreshes its file's time, so eviction is least-recently-used across
  processes). Temporary files left by a killed writer go once an hour old.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from . import _native, serialization
from .exceptions import DeserializationError

ENV_DIR = "XG2_CACHE_DIR"
ENV_LIMIT = "XG2_CACHE_DIR_LIMIT_BYTES"
DEFAULT_LIMIT_BYTES = 1 << 30
_SUFFIX = ".xg2"
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 3600

_module_digest: Optional[str] = None
_module_digest_lock = threading.Lock()


def _native_module_digest() -> str:
    """SHA-256 of the loaded native module's file (once per process)."""
    global _module_digest
    with _module_digest_lock:
        if _module_digest is None:
            digest = hashlib.sha256()
            with open(_native.__file__, "rb") as module_file:
                for chunk in iter(lambda: module_file.read(1 << 20), b""):
                    digest.update(chunk)
            _module_digest = digest.hexdigest()
        return _module_digest


class DiskCache:
    """Compiled-grammar blobs in ``directory``, at most ``limit_bytes`` of them (-1: unbounded)."""

    def __init__(self, directory: "str | os.PathLike[str]", limit_bytes: int = DEFAULT_LIMIT_BYTES) -> None:
        if isinstance(limit_bytes, bool) or not isinstance(limit_bytes, int) or limit_bytes < -1:
            raise ValueError(f"cache_dir_limit_bytes must be an int >= -1, got {limit_bytes!r}")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.limit_bytes = limit_bytes
        self._lock = threading.Lock()
        self.hits = self.misses = self.writes = self.evictions = self.refused = 0

    @classmethod
    def from_environment(cls) -> Optional["DiskCache"]:
        directory = os.environ.get(ENV_DIR)
        if not directory:
            return None
        limit = os.environ.get(ENV_LIMIT)
        try:
            limit_bytes = DEFAULT_LIMIT_BYTES if limit is None else int(limit)
        except ValueError:
            raise ValueError(f"{ENV_LIMIT} must be an integer number of bytes, got {limit!r}") from None
        return cls(directory, limit_bytes)

    def key(self, compiler: Any, request: tuple) -> str:
        """The file name of ``request`` (a compiler's cache key) compiled by ``compiler``."""
        material = repr((
            "xg2-compiled-grammar", int(_native.serialization_format_version), serialization.engine_version(),
            _native_module_digest(), serialization.tokenizer_fingerprint(compiler.tokenizer_info),
            request, compiler._limits, compiler._repetition_compression_threshold,
        ))
        return hashlib.sha256(material.encode("utf-8", "surrogatepass")).hexdigest()

    def path_of(self, key: str) -> Path:
        return self.directory / (key + _SUFFIX)

    def read(self, key: str) -> Optional[bytes]:
        path = self.path_of(key)
        try:
            data = path.read_bytes()
        except OSError:  # absent, or unreadable: a miss
            return None
        try:
            os.utime(path)  # most recently used
        except OSError:
            pass
        return data

    def write(self, key: str, data: bytes) -> None:
        fd, temp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temp, self.path_of(key))
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise
        with self._lock:
            self.writes += 1
        self.evict()

    def discard(self, key: str) -> None:
        try:
            os.unlink(self.path_of(key))
        except OSError:
            pass

    def evict(self) -> None:
        """Removes the oldest files until the directory holds at most ``limit_bytes``."""
        if self.limit_bytes < 0:
            return
        entries = []
        total = 0
        now = time.time()
        with os.scandir(self.directory) as listing:
            for entry in listing:
                try:
                    stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # removed by another process meanwhile
                if entry.name.startswith(_TMP_PREFIX):
                    if now - stat.st_mtime > _STALE_TMP_SECONDS:
                        self._remove(entry.path)
                    continue
                if entry.name.endswith(_SUFFIX):
                    entries.append((stat.st_mtime, entry.path, stat.st_size))
                    total += stat.st_size
        if total <= self.limit_bytes:
            return
        entries.sort()
        for _mtime, path, size in entries:
            if total <= self.limit_bytes:
                break
            if self._remove(path):
                with self._lock:
                    self.evictions += 1
            total -= size

    @staticmethod
    def _remove(path: str) -> bool:
        try:
            os.unlink(path)
            return True
        except OSError:
            return False

    def cached_build(self, compiler: Any, request: tuple, build: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """``build`` (a compile of ``request``) behind this cache: a file found is read back for
        ``compiler``'s tokenizer; otherwise the grammar is compiled and its blob written."""

        def build_through_disk(token: Any) -> Any:
            key = self.key(compiler, request)
            data = self.read(key)
            if data is not None:
                try:
                    grammar = serialization.grammar_from_bytes(data, compiler.tokenizer_info, compiler=compiler)
                except DeserializationError:
                    with self._lock:
                        self.refused += 1
                    self.discard(key)
                else:
                    with self._lock:
                        self.hits += 1
                    return grammar
            with self._lock:
                self.misses += 1
            grammar = build(token)
            try:
                self.write(key, serialization.grammar_to_bytes(grammar))
            except OSError:  # a full or read-only disk costs the reuse, not the compile
                pass
            return grammar

        return build_through_disk

    @property
    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"hits": self.hits, "misses": self.misses, "writes": self.writes,
                    "evictions": self.evictions, "refused": self.refused, "limit_bytes": self.limit_bytes}
