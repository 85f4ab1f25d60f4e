"""Serving-engine adapters, installed as ``xg2_plugin.adapters``.

Each subpackage (``vllm``, later ``sglang``) plugs the engine into one serving framework and
is imported only by that framework's plugin loader, so ``xg2_plugin`` itself never needs the
framework installed.
"""
