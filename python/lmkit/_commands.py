"""The report commands as functions: each fills the core's request from its keywords, calls the entry point the
``lmkit`` command calls, and returns the result as the dict ``lmkit --json <command>`` prints (the schemas of
docs/cli.md), from the same present/ code.

Keywords are the request's fields, named as the command's flags without dashes (``seq_len=8192`` for ``--seq-len
8192``); ``None`` or ``False`` is "not given". An unknown keyword raises TypeError. ``svg=True`` adds the command's chart
as an SVG string under ``"svg"``; a path writes it there. Errors raise ValueError (bad input or arguments),
FileNotFoundError / OSError (files) or RuntimeError, with the core's one-line message naming keywords.
"""

import os
from typing import Any, Dict

from . import _lmkit


def _paths(values) -> list:
    return [os.fspath(v) for v in values]


def flops(*config: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit flops``: the matmul inventory, FLOPs, parameters, MFU/HFU and roofline of one step, e.g.
    ``flops("config.json", seq_len=8192, batch=4, training=True, gpu="h100", mfu=0.4)``."""
    return _lmkit.flops(_paths(config), **options)


def memory(*config: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit memory``: weights, gradients, optimizer states, activations and KV cache, and what fits, e.g.
    ``memory("config.json", mode="training", zero=3, gpus=8, gpu="h100")``."""
    return _lmkit.memory(_paths(config), **options)


def layouts(*config: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit memory --search``: the training layouts of ``gpus`` GPUs that fit, fastest first, why the others fail
    and the cheapest change for the fastest misses, e.g. ``layouts("llama-3.1-405b", gpus=16384, gpu="h100",
    seq_len=8192, global_batch=2048)``. ``memory``/``flops`` take the layout keywords themselves (``tp=8, pp=16,
    sequence_parallel=True, micro_batch=1, global_batch=2048, distributed_optimizer=True, per_stage=True``)."""
    return _lmkit.layouts(_paths(config), **options)


def plan(spec: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit plan``: many models on a few GPUs (placement, tensor parallelism, what-if), from a plan file;
    ``plan("p.json", timeline="day.json")`` (or ``generate_events=1000``) adds the serving day replayed against the
    CUDA caching-allocator simulation under each policy as ``doc["timeline"]``."""
    return _lmkit.plan(os.fspath(spec), **options)


def calibrate(*inputs: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit calibrate``: INT8 activation ranges (minmax, percentile, entropy, mse; ``flavor="ort"`` for ONNX
    Runtime's), from .npy activations or a model run (``model=..., tokens=...``), e.g. ``calibrate("acts.npy",
    method="entropy", output="calib.json", svg=True)``; ``svg=True`` adds the |x| histogram with each method's
    threshold."""
    return _lmkit.calibrate(_paths(inputs), **options)


def quantize(model: Any, output: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit quantize MODEL -o OUTPUT``: an INT8/FP8 checkpoint (compressed-tensors or GGUF) and its error report,
    e.g. ``quantize("stories260K", "out", scheme="w8a16")``; ``svg=True`` adds the per-layer SQNR chart."""
    return _lmkit.quantize(os.fspath(model), os.fspath(output), **options)
