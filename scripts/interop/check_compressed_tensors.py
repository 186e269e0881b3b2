"""Check 3: transformers + compressed-tensors load every checkpoint `lmkit quantize` writes, as the scheme it claims.

The schemes and granularities come from lmkit itself (the one-line error of an unknown --scheme / --granularity lists
every value it accepts), so a new scheme is checked as soon as lmkit offers it. Each scheme x granularity is written
from stories260K without calibration and with `lmkit calibrate --model` ranges (static activation scales); a
combination lmkit refuses with a one-line error is recorded as refused, not failed. Every checkpoint written must:
  1. load with AutoModelForCausalLM.from_pretrained (compressed, as served) with no missing, unexpected or mismatched
     keys;
  2. hold, loaded dequantized (CompressedTensorsConfig(dequantize=True), or run_compressed=False where transformers
     predates it), weights within the error lmkit's report states for each tensor (max |w_loaded - w| at most the
     report's max_abs_err): a loader that reads the codes with another layout is off by whole scales. That load makes a
     dense float model, which has no place for activation scales (static input_scale shows as unexpected there): its
     key report is recorded, not judged.
  3. drift from the float model as lmkit predicts: on token windows sampled from stories260K, the mean and p99
     per-token KL(float || loaded) and the top-1 agreement that transformers gives match `lmkit eval FLOAT --compare
     CHECKPOINT` on the same windows (mean KL within 10% + 1e-5, p99 within 25%, top-1 within 0.02: activation codes
     that sit on a rounding boundary may round differently in torch's float path and lmkit's integer one, and the p99
     of 512 positions is their 6th largest KL, where one FP8 activation code rounded the other way moves it by ~15%;
     the exact reading of check_ct_loader.py is what pins the format).
Then the MoE fixtures, per-expert and fused 3-D experts, every scheme and method (check_ct_moe.py says how).
group:N uses the largest N that divides every Linear input width of the model (4 for stories260K: 64 and 172)."""
import json
import math
import os
import re
import subprocess
import sys

import numpy as np

import check_ct_moe
from common import main, REPO, Check, run_lmkit, workdir

MODEL = os.path.join(REPO, "tests", "data", "model", "stories260K")
SAMPLES, NEW = 8, 64  # eval windows: 8 sequences of BOS + 64 sampled tokens


def accepted_values(flag):
    """The values lmkit accepts for `quantize --<flag>`: from its one-line error for an unknown value ("--scheme must
    be a, b or c, not '?'"), else from --help (CLI11's "TEXT:{a,b}" or the option's description)."""
    import subprocess
    p = subprocess.run([os.environ.get("LMKIT", os.path.join(REPO, "build", "release", "lmkit")), "quantize", MODEL,
                        "-o", os.devnull + ".none", "--" + flag, "?"], capture_output=True, text=True)
    m = re.search(r"--%s must be (.+?), not '" % flag, p.stderr)
    if m:
        return split_choices(m.group(1)), "error message"
    h = run_lmkit("quantize", "--help").stdout
    m = re.search(r"--%s TEXT:\{([^}]*)\}" % flag, h)
    if m:
        return [v.strip() for v in m.group(1).split(",") if v.strip()], "--help set"
    m = re.search(r"--%s TEXT\s+(.+)" % flag, h)
    if m:
        return split_choices(m.group(1)), "--help text"
    return [], "neither lmkit's error nor its --help lists the values of --" + flag


def split_choices(text):
    """"w8a16 (weights only), w8a8 or fp8" -> ["w8a16", "w8a8", "fp8"]."""
    text = re.sub(r"\([^)]*\)", "", text)
    return [v.strip() for v in re.split(r",| or ", text) if v.strip()]


def kl_stats(p_logits, q_logits):
    """Per-token KL(p || q) from logits [n, V] (float64), and top-1 agreement."""
    def logsoftmax(x):
        x = x - x.max(axis=-1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
    lp, lq = logsoftmax(p_logits.astype(np.float64)), logsoftmax(q_logits.astype(np.float64))
    kl = (np.exp(lp) * (lp - lq)).sum(axis=-1)
    top1 = float((p_logits.argmax(-1) == q_logits.argmax(-1)).mean())
    # p99 by nearest rank (the ceil(0.99 n)-th smallest), as lmkit eval reports it (docs/model.md).
    p99 = float(np.sort(kl)[max(math.ceil(0.99 * len(kl)), 1) - 1])
    return {"mean_kl": float(kl.mean()), "p99_kl": p99, "top1_agreement": top1}


def logits(model, windows):
    import torch
    with torch.no_grad():
        out = model(torch.tensor(windows.astype(np.int64))).logits
    return out[:, :-1, :].reshape(-1, out.shape[-1]).float().numpy()  # positions that predict a scored token


def load(path, **kw):
    import torch
    from transformers import AutoModelForCausalLM
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, output_loading_info=True, **kw)


def keys_ok(c, label, info):
    bad = {k: sorted(v)[:6] for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys",
                                                                     "mismatched_keys", "error_msgs")}
    c.expect(not bad, "%s: %s" % (label, "; ".join("%d %s, e.g. %s" % (len(info[k]), k, v) for k, v in bad.items())))
    return not bad


def check_weights(c, label, model, report, orig):
    sd = model.state_dict()
    worst = 0.0
    for t in report["tensors"]:
        name = t["name"]
        if name not in sd:
            c.fail("%s: %s is not a tensor of the decompressed model" % (label, name))
            continue
        w = sd[name].float().numpy()
        if w.shape != orig[name].shape:
            c.fail("%s: %s decompressed to shape %s, not %s" % (label, name, list(w.shape), list(orig[name].shape)))
            continue
        err = float(np.abs(w.astype(np.float64) - orig[name].astype(np.float64)).max())
        bound = t["max_abs_err"] * (1 + 1e-5) + 1e-7
        worst = max(worst, err / max(t["max_abs_err"], 1e-30))
        c.expect(err <= bound, "%s: %s decompressed is off by up to %.4g where lmkit's report states %.4g" % (
            label, name, err, t["max_abs_err"]))
    return worst


def dense_config():
    import inspect
    from transformers.utils.quantization_config import CompressedTensorsConfig
    if "dequantize" in inspect.signature(CompressedTensorsConfig.__init__).parameters:
        return CompressedTensorsConfig(dequantize=True)
    return CompressedTensorsConfig(run_compressed=False)


def run():
    import compressed_tensors
    import torch
    import transformers
    from safetensors.numpy import load_file
    from transformers import AutoModelForCausalLM
    torch.manual_seed(0)
    c = Check("compressed_tensors")
    c.details.update(transformers=transformers.__version__, compressed_tensors=compressed_tensors.__version__,
                     torch=torch.__version__)
    work = workdir("ct")
    schemes, src_s = accepted_values("scheme")
    grans, src_g = accepted_values("granularity")
    c.details["offered"] = {"schemes": schemes, "granularities": grans, "listed_by": [src_s, src_g]}
    c.expect(schemes and grans, "could not read the schemes/granularities lmkit offers")
    cfg = json.load(open(os.path.join(MODEL, "config.json")))
    group = math.gcd(cfg["hidden_size"], cfg["intermediate_size"])
    grans = [("group:%d" % group) if g.startswith("group:") else g for g in grans]

    eval_npy = os.path.join(work, "eval.npy")
    run_lmkit("--quiet", "generate", MODEL, "--prompt-ids", "1", "--max-tokens", NEW, "--temperature", "1", "--seed", 1,
              "--samples", SAMPLES, "-o", eval_npy)
    calib_npy = os.path.join(work, "calib.npy")
    run_lmkit("--quiet", "generate", MODEL, "--prompt-ids", "1", "--max-tokens", NEW, "--temperature", "1", "--seed", 2,
              "--samples", SAMPLES, "-o", calib_npy)
    calib = os.path.join(work, "calib.json")
    run_lmkit("--quiet", "calibrate", "--model", MODEL, "--tokens", calib_npy, "--seq-len", NEW + 1, "--method",
              "minmax", "-o", calib)
    windows = np.load(eval_npy).astype(np.int64).reshape(SAMPLES, NEW + 1)
    orig = load_file(os.path.join(MODEL, "model.safetensors"))
    fmodel = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    f_logits = logits(fmodel, windows)

    results = []

    def check_one(label, args, strict=True):
        out = os.path.join(work, re.sub(r"[^\w]+", "_", label))
        args = ["--quiet", "quantize", MODEL, "-o", out] + args + ["--report", out + ".json"]
        p = run_lmkit(*args, check=False)
        row = {"checkpoint": label}
        results.append(row)
        if p.returncode != 0:
            msg = p.stderr.strip()
            row["refused"] = msg
            c.expect(p.returncode in (1, 2) and msg and "\n" not in msg,
                     "%s: lmkit failed without a one-line reason (exit %d): %r" % (label, p.returncode, msg))
            return
        report = json.load(open(out + ".json"))
        qcfg = json.load(open(os.path.join(out, "config.json")))["quantization_config"]
        row["config"] = qcfg.get("format")
        try:
            qmodel, info = load(out)
        except Exception as e:  # noqa: BLE001 - the loader's message is the finding
            c.fail("%s: transformers cannot load it: %s" % (label, str(e).splitlines()[0][:300]))
            row["loads"] = False
            return
        row["loads"] = keys_ok(c, label + " (compressed)", info)
        # The independent reading of the file (tests/scripts/check_ct_loader.py): each decompressed weight
        # equals a numpy dequantization bit for bit, and the logits equal a simulation of the scheme. (Not for
        # SmoothQuant: the simulation runs the original model, whose norms are not the smoothed ones.)
        if strict:
            strict_run = subprocess.run([sys.executable, os.path.join(REPO, "tests", "scripts", "check_ct_loader.py"),
                                         MODEL, out], capture_output=True, text=True)
            row["exact_reading"] = strict_run.returncode == 0
            why = (strict_run.stderr.strip().splitlines() or ["exit %d" % strict_run.returncode])[-1]
            c.expect(strict_run.returncode == 0, "%s: %s" % (label, why[:300]))
            try:
                dmodel, dinfo = load(out, quantization_config=dense_config())
                row["decompressed_load_keys"] = {k: len(v) for k, v in dinfo.items() if v}
                row["weight_err_vs_report"] = round(check_weights(c, label, dmodel, report, orig), 6)
            except Exception as e:  # noqa: BLE001
                c.fail("%s: transformers cannot load it decompressed: %s" % (label, str(e).splitlines()[0][:300]))
        try:
            hf = kl_stats(f_logits, logits(qmodel, windows))
        except Exception as e:  # noqa: BLE001
            c.fail("%s: the loaded model does not run: %s" % (label, str(e).splitlines()[0][:300]))
            return
        row["transformers"] = {k: round(v, 6) for k, v in hf.items()}
        ev = run_lmkit("--json", "eval", MODEL, "--tokens", eval_npy, "--seq-len", NEW + 1, "--compare", out,
                       check=False)
        if ev.returncode != 0:
            c.fail("%s: lmkit eval cannot run the checkpoint lmkit wrote: %s" % (label, ev.stderr.strip()))
            return
        lm = json.loads(ev.stdout)["compare"]
        row["lmkit_eval"] = {k: round(lm[k], 6) for k in hf}
        row["mode"] = lm.get("mode")
        for k, tol in (("mean_kl", 0.1), ("p99_kl", 0.25)):
            c.expect(abs(hf[k] - lm[k]) <= tol * lm[k] + 1e-5,
                     "%s: transformers' %s %.4g, lmkit's report %.4g" % (label, k, hf[k], lm[k]))
        c.expect(abs(hf["top1_agreement"] - lm["top1_agreement"]) <= 0.02 + 1e-9,
                 "%s: transformers' top-1 agreement %.4f, lmkit's report %.4f" % (
                     label, hf["top1_agreement"], lm["top1_agreement"]))

    for scheme in schemes:
        for gran in grans:
            for calibrated in (False, True):
                label = "%s %s%s" % (scheme, gran, " static" if calibrated else "")
                check_one(label, ["--scheme", scheme, "--granularity", gran] + (["--calibration", calib]
                                                                                 if calibrated else []))
    # GPTQ and SmoothQuant outputs (issue #40): the same loads, on the calibration tokens above.
    tok = ["--calibration-tokens", calib_npy, "--seq-len", NEW + 1]
    check_one("w8a8 channel gptq", ["--scheme", "w8a8", "--method", "gptq"] + tok)
    check_one("w8a16 channel gptq act-order", ["--scheme", "w8a16", "--method", "gptq", "--act-order"] + tok)
    check_one("w4a16 group:%d gptq" % group, ["--scheme", "w4a16", "--granularity", "group:%d" % group, "--method",
                                              "gptq"] + tok)
    check_one("w8a8 channel smoothquant 0.8 gptq", ["--scheme", "w8a8", "--smoothquant", "0.8", "--method", "gptq"] +
              tok, strict=False)
    c.details["checkpoints"] = results
    c.details["written"] = sum("refused" not in r for r in results)
    c.details["refused"] = sum("refused" in r for r in results)
    # Every MoE fixture in both expert layouts x every scheme (check_ct_moe.py).
    check_ct_moe.run_moe(c, work)
    return c


if __name__ == "__main__":
    main("compressed_tensors", run)
