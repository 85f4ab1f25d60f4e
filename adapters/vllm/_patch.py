"""The only place that changes vLLM: registers a structured-output backend name.

vLLM 0.32/0.33 have no backend registry (the backend name is a ``Literal`` and the engine
core picks the backend with an if/elif), so four functions are wrapped, each passing every
other backend straight through:

1. config: ``StructuredOutputsConfig.backend`` accepts the name, and its validator allows
   ``disable_any_whitespace`` / ``disable_additional_properties`` with it;
2. frontend: ``SamplingParams._validate_structured_outputs`` validates our requests (400 errors)
   instead of vLLM's fallback to ``auto``;
3. engine core: ``StructuredOutputManager.grammar_init`` constructs :class:`XG2Backend`;
4. engine core: ``StructuredOutputManager._create_grammar`` makes the request's own options
   (``disable_any_whitespace``, ``whitespace_pattern``) visible to the backend, which vLLM
   otherwise hands only the request's (type, spec) key.

Workers need nothing: the bitmask has vLLM's layout. These are private details that change
between releases, so before patching anything :func:`install` checks that every internal it
hooks is there, with the shape it expects; if one is missing it changes nothing and raises
:class:`UnsupportedVLLMError`. A release outside ``SUPPORTED_VLLM_VERSIONS`` whose internals
pass that check is hooked, with a warning that it was not tested.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Literal, get_args

logger = logging.getLogger("xg2_plugin.adapters.vllm")

SUPPORTED_VLLM_VERSIONS = ((0, 32), (0, 33))
"""vLLM major.minor releases whose internals this module was checked against."""

_lock = threading.Lock()
_installed: set[str] = set()


class UnsupportedVLLMError(RuntimeError):
    """The installed vLLM is not a version the xg2 adapter knows how to hook into."""


def vllm_version() -> tuple[str, tuple[int, int]]:
    """The installed vLLM version string and its (major, minor)."""
    import vllm
    from packaging.version import InvalidVersion, Version

    text = str(getattr(vllm, "__version__", "unknown"))
    try:
        release = Version(text).release
    except InvalidVersion:
        return text, (-1, -1)
    return text, (release + (0, 0))[:2]


def supported_versions_text() -> str:
    """The checked vLLM releases, as users read them ("0.32, 0.33")."""
    return ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VLLM_VERSIONS)


def missing_internals() -> list[str]:
    """The vLLM internals :func:`install` hooks that this vLLM lacks (empty: all present).

    Only looks; nothing is changed. Each entry names the module attribute and what is wrong.
    """
    import importlib

    missing: list[str] = []

    def find(module_name: str, path: str) -> Any:
        try:
            value: Any = importlib.import_module(module_name)
        except ImportError as error:
            missing.append(f"{module_name} ({error})")
            return None
        for part in path.split("."):
            if not hasattr(value, part):
                missing.append(f"{module_name}.{path}")
                return None
            value = getattr(value, part)
        return value

    so_module = "vllm.config.structured_outputs"
    config_cls = find(so_module, "StructuredOutputsConfig")
    backend_literal = find(so_module, "StructuredOutputsBackend")
    find("vllm.config", "VllmConfig")
    if backend_literal is not None and not get_args(backend_literal):
        missing.append(f"{so_module}.StructuredOutputsBackend (not a Literal of backend names)")
    if config_cls is not None:
        decorators = getattr(config_cls, "__pydantic_decorators__", None)
        validators = getattr(decorators, "model_validators", {})
        if "_validate_structured_output_config" not in validators:
            missing.append(f"{so_module}.StructuredOutputsConfig._validate_structured_output_config")
        if "backend" not in getattr(config_cls, "__dataclass_fields__", {}):
            missing.append(f"{so_module}.StructuredOutputsConfig.backend (dataclass field)")
    find("vllm.sampling_params", "SamplingParams._validate_structured_outputs")
    find("vllm.sampling_params", "check_json_nesting")
    find("vllm.exceptions", "VLLMValidationError")
    find("vllm.v1.structured_output", "StructuredOutputManager.grammar_init")
    find("vllm.v1.structured_output", "StructuredOutputManager._create_grammar")
    find("pydantic.dataclasses", "rebuild_dataclass")
    return missing


def install(name: str) -> None:
    """Registers backend ``name`` with vLLM in this process (idempotent, thread-safe).

    Args:
        name: the backend name users pass as ``structured_outputs_config.backend``.

    Raises:
        UnsupportedVLLMError: this vLLM lacks an internal the adapter hooks; vLLM is unchanged.
    """
    with _lock:
        if name in _installed:
            return
        text, major_minor = vllm_version()
        missing = missing_internals()
        if missing:
            raise UnsupportedVLLMError(
                f"the xg2 backend is not available on vLLM {text}: it lacks internals the adapter "
                f"hooks ({'; '.join(missing)}); xg2_plugin supports vLLM {supported_versions_text()}"
            )
        if major_minor not in SUPPORTED_VLLM_VERSIONS:
            logger.warning(
                "xg2_plugin was tested with vLLM %s; vLLM %s has the internals it hooks, so the xg2 "
                "backend is enabled, untested on this release", supported_versions_text(), text,
            )
        # The checks above found every attribute these touch, so none of them fails halfway.
        _patch_config(name)
        _patch_frontend(name)
        _patch_engine_core(name)
        _installed.add(name)


def _patch_config(name: str) -> None:
    from pydantic.dataclasses import rebuild_dataclass
    from vllm.config import VllmConfig
    from vllm.config import structured_outputs as so_module

    config_cls = so_module.StructuredOutputsConfig
    names = get_args(so_module.StructuredOutputsBackend)
    if name in names:
        return
    extended: Any = Literal[(*names, name)]
    so_module.StructuredOutputsBackend = extended
    config_cls.__annotations__["backend"] = extended
    config_cls.__dataclass_fields__["backend"].type = extended

    decorator = config_cls.__pydantic_decorators__.model_validators["_validate_structured_output_config"]
    vllm_validator = decorator.func

    def validate_config(self: Any) -> Any:
        # Both whitespace and additionalProperties options apply to this backend.
        if self.backend == name:
            return self
        return vllm_validator(self)

    decorator.func = validate_config
    rebuild_dataclass(config_cls, force=True)
    rebuild_dataclass(VllmConfig, force=True)


def _patch_frontend(name: str) -> None:
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams, check_json_nesting

    from xg2_plugin.exceptions import XG2Error

    from . import backend

    vllm_validate = SamplingParams._validate_structured_outputs

    def validate_structured_outputs(
        self: SamplingParams, model_config: Any, structured_outputs_config: Any, tokenizer: Any
    ) -> None:
        params = self.structured_outputs
        if params is None or structured_outputs_config is None or structured_outputs_config.backend != name:
            return vllm_validate(self, model_config, structured_outputs_config, tokenizer)
        if getattr(model_config, "is_diffusion", False):
            raise VLLMValidationError("the xg2 backend constrains left-to-right decoding, not diffusion models")
        if tokenizer is None:
            raise VLLMValidationError("structured outputs need a tokenizer (not available with skip_tokenizer_init)")
        if params._backend not in (None, name):
            raise VLLMValidationError(
                f"this server uses the '{name}' structured output backend; the request asked for "
                f"'{params._backend}' (remove '_backend' from the request)"
            )
        check_json_nesting(params.json)
        check_json_nesting(params.structural_tag, structural_tag=True)
        try:
            backend.check_request(params, structured_outputs_config)
        except (ValueError, TypeError, XG2Error) as error:
            raise VLLMValidationError(f"invalid structured output request for the {name} backend: {error}") from error
        params._backend = name

    SamplingParams._validate_structured_outputs = validate_structured_outputs  # type: ignore[method-assign]


def _patch_engine_core(name: str) -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    from .backend import REQUEST_PARAMS, XG2Backend

    vllm_grammar_init = StructuredOutputManager.grammar_init
    vllm_create_grammar = StructuredOutputManager._create_grammar

    def grammar_init(self: StructuredOutputManager, request: Any) -> None:
        params = request.sampling_params
        if (
            self.backend is None
            and request.structured_output_request is not None
            and params is not None
            and params.structured_outputs is not None
            and params.structured_outputs._backend == name
        ):
            self.backend = XG2Backend(
                self.vllm_config,
                tokenizer=self.tokenizer,
                vocab_size=self.vllm_config.model_config.get_vocab_size(),
            )
            if hasattr(self, "backend_name"):  # vLLM 0.33 records which backend the engine runs
                self.backend_name = name
        vllm_grammar_init(self, request)

    def create_grammar(self: StructuredOutputManager, request: Any) -> Any:
        # Runs on one compile thread from start to end: the backend reads the parameters there.
        if not isinstance(self.backend, XG2Backend) or request.sampling_params is None:
            return vllm_create_grammar(self, request)
        token = REQUEST_PARAMS.set(request.sampling_params.structured_outputs)
        try:
            return vllm_create_grammar(self, request)
        finally:
            REQUEST_PARAMS.reset(token)

    StructuredOutputManager.grammar_init = grammar_init  # type: ignore[method-assign]
    StructuredOutputManager._create_grammar = create_grammar  # type: ignore[method-assign]
