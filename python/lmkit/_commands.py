"""The report commands as functions: each runs the same command line as the ``lmkit`` binary, in this process, and
returns its ``--json`` document as a dict (the schemas of docs/cli.md).

Arguments: positional ones are the command's positionals (a config file, a model directory ...); keywords are its
flags, ``seq_len=8192`` for ``--seq-len 8192``, ``True`` for a flag without a value, a list for a repeated flag. Pass
``svg=True`` to get the command's chart as an SVG string under the ``"svg"`` key. Errors raise ValueError (bad input
or arguments), FileNotFoundError / OSError (files) or RuntimeError, with the command's one-line message.
"""

import json
import os
import tempfile
from typing import Any, Dict, List, Sequence

from . import _lmkit


class CommandResult:
    """What one command line printed: ``returncode``, ``stdout`` (bytes) and ``stderr`` (text)."""

    def __init__(self, returncode: int, stdout: bytes, stderr: str) -> None:
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self) -> str:
        return f"CommandResult(returncode={self.returncode}, stdout={len(self.stdout)} bytes, stderr={self.stderr!r})"


def run(*args: str, check: bool = True) -> CommandResult:
    """Runs ``lmkit ARGS...`` in this process (the GIL is released) and returns what it printed. With ``check``, a
    non-zero exit raises the exception for its error (see the module doc)."""
    rc, out, err = _lmkit._run_cli([str(a) for a in args], check)
    return CommandResult(rc, out, err)


def _flags(options: Dict[str, Any]) -> List[str]:
    argv: List[str] = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                argv += [flag, str(v)]
        else:
            argv += [flag, str(value)]
    return argv


def _report(command: Sequence[str], positionals: Sequence[Any], options: Dict[str, Any]) -> Dict[str, Any]:
    options = dict(options)
    want_svg = options.pop("svg", None)
    with tempfile.TemporaryDirectory(prefix="lmkit-") as tmp:
        svg_path = None
        if want_svg is True:
            svg_path = os.path.join(tmp, "chart.svg")
            options["svg"] = svg_path
        elif want_svg:
            options["svg"] = want_svg  # a path: the chart is written there, as the CLI does
        argv = ["--json", *command, *[str(p) for p in positionals], *_flags(options)]
        result = run(*argv)
        doc = json.loads(result.stdout)
        if svg_path is not None and os.path.exists(svg_path):
            with open(svg_path, encoding="utf-8") as f:
                doc["svg"] = f.read()
    return doc


def flops(*config: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit flops``: the matmul inventory, FLOPs, parameters, MFU/HFU and roofline of one step, e.g.
    ``flops("config.json", seq_len=8192, batch=4, training=True, gpu="h100", mfu=0.4)``."""
    return _report(["flops"], config, options)


def memory(*config: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit memory``: weights, gradients, optimizer states, activations and KV cache, and what fits, e.g.
    ``memory("config.json", mode="training", zero=3, gpus=8, gpu="h100")``."""
    return _report(["memory"], config, options)


def layouts(*config: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit memory --search``: the training layouts of ``gpus`` GPUs that fit, fastest first, why the others fail
    and the cheapest change for the fastest misses, e.g. ``layouts("llama-3.1-405b", gpus=16384, gpu="h100",
    seq_len=8192, global_batch=2048)``. ``memory``/``flops`` take the layout keywords themselves (``tp=8, pp=16,
    sequence_parallel=True, micro_batch=1, global_batch=2048, distributed_optimizer=True, per_stage=True``)."""
    return _report(["memory"], config, {**options, "search": True})


def plan(*spec: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit plan``: many models on a few GPUs (placement, tensor parallelism, what-if), from a plan file;
    ``plan("p.json", timeline="day.json")`` (or ``generate_events=1000``) adds the serving day replayed against the
    CUDA caching-allocator simulation under each policy as ``doc["timeline"]``."""
    return _report(["plan"], spec, options)


def calibrate(*inputs: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit calibrate``: INT8 activation ranges (minmax, percentile, entropy, mse; ``flavor="ort"`` for ONNX
    Runtime's), from .npy activations or a model run, e.g. ``calibrate("acts.npy", method="entropy",
    output="calib.json", svg=True)``; ``svg=True`` adds the |x| histogram with each method's threshold."""
    return _report(["calibrate"], inputs, options)


def quantize(model: Any, output: Any, **options: Any) -> Dict[str, Any]:
    """``lmkit quantize MODEL -o OUTPUT``: an INT8/FP8 checkpoint (compressed-tensors or GGUF) and its error report,
    e.g. ``quantize("stories260K", "out", scheme="w8a16")``; ``svg=True`` adds the per-layer SQNR chart."""
    return _report(["quantize"], [model], {"output": output, **options})
