"""Check 3, MoE part: transformers + compressed-tensors load what `lmkit quantize` writes from every MoE fixture of
tests/data/model (scripts/model-fixtures.py), in both expert layouts, for every scheme and method.

Each fixture is used as saved and in the other expert layout, converted here with numpy (no weight changes):
  per-expert  `<mlp>.experts.<e>.{gate_proj,up_proj,down_proj}.weight` (Mixtral: `block_sparse_moe.experts.<e>.
              {w1,w3,w2}.weight`), 2-D, as transformers 4 and the Hub checkpoints store them;
  fused       `<mlp>.experts.gate_up_proj` [E, 2I, H] (gate rows, then up rows) and `<mlp>.experts.down_proj`
              [E, H, I], as transformers 5 holds them (Mixtral's block named `mlp`).
For each layout x scheme (w8a16, w8a8, w4a16 group:G, fp8; w8a8 and fp8-static with static input scales from
`lmkit calibrate --model`) x method (rtn, gptq; gptq for the int schemes without static scales) the checkpoint must
  1. load with AutoModelForCausalLM.from_pretrained (compressed, as served) with 0 missing, 0 unexpected, 0 mismatched
     keys and no conversion error (transformers raises on those);
  2. loaded dequantized (CompressedTensorsConfig(dequantize=True)), hold weights within lmkit's reported max_abs_err
     of the float ones (a fused expert tensor is held to the largest bound of its experts);
  3. give the logits lmkit's own forward pass gives on the same checkpoint (`lmkit generate --logits` at the end of
     each eval window, against transformers' on the same ids): weight-only schemes within 1e-3 (the same arithmetic),
     and transformers' mean KL(float || loaded) equal to `lmkit eval FLOAT --compare CHECKPOINT`'s within 0.1%; w8a8
     with the median over those positions of KL(transformers || lmkit) at most 10% of KL(float || lmkit) (activation
     codes on a rounding boundary round differently in torch, and where that flips a near-tie of the top-k routing
     one position moves far: the largest is recorded); fp8 recorded, not judged: transformers runs the
     routed experts as dense fused tensors with unquantized activations, where lmkit (and vLLM) quantize them.
G is the largest group size that divides every Linear input width of the fixture. The table of every row is printed
to stderr and kept in the check's details; with LMKIT_MOE_GOLDEN=FILE, the key lists (name, dtype, shape) and the
quantization_config of the RTN outputs of the fixtures as saved are written to FILE (tests/data/quant/moe_keys.json,
which tests/cli/quant_moe_cli_test.cpp holds lmkit to without transformers)."""
import json
import math
import os
import re
import sys

import numpy as np

from common import REPO, Check, main, run_lmkit, workdir

FIXTURES = ["mixtral", "qwen2_moe", "qwen3_moe_fused", "deepseek_v2", "deepseek_v3_fused"]
# --scheme values; "+static": with `lmkit calibrate --model` ranges (static input scales).
SCHEMES = ["w8a16", "w8a8", "w4a16", "fp8", "w8a8+static", "fp8-static+static"]
ONLY = [s for s in os.environ.get("LMKIT_MOE_SCHEMES", "").split(",") if s]  # run only these (debugging)
ONLY_FX = [s for s in os.environ.get("LMKIT_MOE_FIXTURES", "").split(",") if s]
GOLDEN_ONLY = os.environ.get("LMKIT_MOE_GOLDEN_ONLY") == "1"  # only what LMKIT_MOE_GOLDEN records
PROMPT_LENS = (16, 32, 47)  # positions where lmkit's own logits (`generate --logits`) meet transformers'
WEIGHT_ONLY = ("w8a16", "w4a16")
SAMPLES, NEW = 4, 47  # eval windows: BOS + 47 sampled tokens
PER_EXPERT = re.compile(r"^(.*\.)(mlp|block_sparse_moe)\.experts\.(\d+)\.(gate_proj|up_proj|down_proj|w1|w3|w2)"
                        r"\.weight$")


def fixture_dir(name):
    return os.path.join(REPO, "tests", "data", "model", name)


def is_fused(tensors):
    return any(k.endswith(".experts.gate_up_proj") for k in tensors)


def to_fused(tensors, model_type):
    """The per-expert tensors merged into transformers 5's fused layout (others unchanged; Mixtral's block_sparse_moe
    renamed mlp, as transformers 5 names it)."""
    if is_fused(tensors):
        return dict(tensors)
    out, experts = {}, {}
    for k, v in tensors.items():
        m = PER_EXPERT.match(k)
        if not m:
            out[k.replace(".block_sparse_moe.", ".mlp.")] = v
            continue
        prefix, _, e, leaf = m.groups()
        role = {"w1": "gate", "gate_proj": "gate", "w3": "up", "up_proj": "up", "w2": "down", "down_proj": "down"}[leaf]
        experts.setdefault(prefix + "mlp.experts.", {}).setdefault(int(e), {})[role] = v
    for p, by_e in experts.items():
        es = [by_e[e] for e in sorted(by_e)]
        out[p + "gate_up_proj"] = np.stack([np.concatenate([x["gate"], x["up"]], axis=0) for x in es])
        out[p + "down_proj"] = np.stack([x["down"] for x in es])
    return out


def to_per_expert(tensors, model_type):
    """The fused expert tensors split into per-expert 2-D ones (Mixtral: block_sparse_moe.experts.<e>.w1/w3/w2)."""
    if not is_fused(tensors):
        return dict(tensors)
    w123 = model_type == "mixtral"
    out = {}
    for k, v in tensors.items():
        if w123:
            k = k.replace(".mlp.", ".block_sparse_moe.")
        if k.endswith(".experts.gate_up_proj"):
            p, half = k[:-len("gate_up_proj")], v.shape[1] // 2
            for e in range(v.shape[0]):
                out["%s%d.%s.weight" % (p, e, "w1" if w123 else "gate_proj")] = np.ascontiguousarray(v[e, :half])
                out["%s%d.%s.weight" % (p, e, "w3" if w123 else "up_proj")] = np.ascontiguousarray(v[e, half:])
        elif k.endswith(".experts.down_proj"):
            p = k[:-len("down_proj")]
            for e in range(v.shape[0]):
                out["%s%d.%s.weight" % (p, e, "w2" if w123 else "down_proj")] = np.ascontiguousarray(v[e])
        else:
            out[k] = v
    return out


def write_model(src, dst, tensors):
    """A copy of fixture directory `src` (config.json) with `tensors` as its model.safetensors."""
    import shutil
    from safetensors.numpy import save_file
    os.makedirs(dst, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), dst)
    save_file(tensors, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})


def group_size(tensors):
    g = 0
    for k, v in tensors.items():
        if (k.endswith(".weight") and v.ndim == 2) or k.endswith((".experts.gate_up_proj", ".experts.down_proj")):
            g = math.gcd(g, v.shape[-1])
    return g


def fused_bounds(report):
    """lmkit's max_abs_err per tensor of the fused (transformers 5) naming: a per-expert entry bounds its fused
    tensor (the largest bound of its experts)."""
    b = {}
    for t in report["tensors"]:
        name = t["name"]
        m = PER_EXPERT.match(name)
        if m:
            prefix, _, _, leaf = m.groups()
            name = prefix + "mlp.experts." + ("down_proj" if leaf in ("down_proj", "w2") else "gate_up_proj")
        else:
            name = name.replace(".block_sparse_moe.", ".mlp.")
        b[name] = max(b.get(name, 0.0), t["max_abs_err"])
    return b


def kl_mean(p_logits, q_logits):
    def logsoftmax(x):
        x = x - x.max(axis=-1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
    lp, lq = logsoftmax(p_logits.astype(np.float64)), logsoftmax(q_logits.astype(np.float64))
    return float((np.exp(lp) * (lp - lq)).sum(axis=-1).mean())


def logits(model, windows):
    import torch
    with torch.no_grad():
        out = model(torch.tensor(windows.astype(np.int64))).logits
    return out[:, :-1, :].reshape(-1, out.shape[-1]).float().numpy()


def quiet_load(path, **kw):
    """from_pretrained with output_loading_info; transformers' load report (stderr) is kept for the failure text."""
    import contextlib
    import io
    import torch
    from transformers import AutoModelForCausalLM
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            m, info = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, output_loading_info=True, **kw)
        except Exception as e:  # noqa: BLE001 - the loader's message is the finding
            return None, None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:300])
    return m, info, None


def key_list(out):
    from safetensors import safe_open
    rows = []
    for fn in sorted(f for f in os.listdir(out) if f.endswith(".safetensors")):
        with safe_open(os.path.join(out, fn), "np") as f:
            for k in sorted(f.keys()):
                s = f.get_slice(k)
                rows.append([k, s.get_dtype(), list(s.get_shape())])
    return rows


def check_checkpoint(c, label, row, args, mdir, eval_npy, windows, f_logits, fused_orig, scheme):
    """Writes one checkpoint (`lmkit` args) and holds it to items 1-3 of the docstring; fills `row`. True when it
    was written and loaded with no key problem."""
    from transformers.utils.quantization_config import CompressedTensorsConfig
    out = args[4]
    p = run_lmkit(*args, check=False)
    if p.returncode != 0:
        row["error"] = p.stderr.strip()
        c.fail("%s: lmkit quantize failed: %s" % (label, p.stderr.strip()[:300]))
        return False
    report = json.load(open(out + ".json"))
    qmodel, info, err = quiet_load(out)
    if qmodel is None:
        row["error"] = err
        c.fail("%s: transformers cannot load it: %s" % (label, err))
        return False
    clean = True
    for k, short in (("missing_keys", "missing"), ("unexpected_keys", "unexpected"), ("mismatched_keys", "mismatched"),
                     ("error_msgs", "load_errors")):
        row[short] = len(info.get(k) or [])
        clean = c.expect(not info.get(k), "%s: %d %s, e.g. %s" % (label, len(info.get(k) or []), k,
                                                                sorted(info.get(k) or [])[:4])) and clean
    q_logits = logits(qmodel, windows)
    hf = kl_mean(f_logits, q_logits)
    row["kl_transformers"] = round(hf, 6)
    # The logits themselves: lmkit's forward pass on the same checkpoint (`generate --logits` gives the logits at the
    # last position of prompt + generated token), transformers' on that sequence.
    import torch
    lm_at, hf_at = [], []
    for i in range(windows.shape[0]):
        for n in PROMPT_LENS:
            g = run_lmkit("--json", "generate", out, "--prompt-ids", ",".join(str(int(t)) for t in windows[i, :n]),
                          "--max-tokens", 1, "--logits", check=False)
            if not c.expect(g.returncode == 0, "%s: lmkit generate cannot run it: %s" % (label, g.stderr.strip())):
                return False
            doc = json.loads(g.stdout)
            lm_at.append(doc["final_logits"])
            with torch.no_grad():
                seq = torch.tensor([doc["sequences"][0]], dtype=torch.int64)
                hf_at.append(qmodel(seq).logits[0, -1].float().numpy())
    lm_at, hf_at = np.array(lm_at, dtype=np.float64), np.array(hf_at, dtype=np.float64)
    row["max_logit_diff"] = round(float(np.abs(lm_at - hf_at).max()), 6)
    per_position = [kl_mean(hf_at[k:k + 1], lm_at[k:k + 1]) for k in range(len(lm_at))]
    row["kl_lmkit_vs_transformers"] = round(float(np.median(per_position)), 6)
    row["kl_lmkit_vs_transformers_max"] = round(float(np.max(per_position)), 6)
    if scheme in WEIGHT_ONLY:
        c.expect(row["max_logit_diff"] <= 1e-3, "%s: lmkit's logits differ from transformers' by up to %.4g" % (
            label, row["max_logit_diff"]))
    ev = run_lmkit("--json", "eval", mdir, "--tokens", eval_npy, "--seq-len", NEW + 1, "--compare", out, check=False)
    if c.expect(ev.returncode == 0, "%s: lmkit eval cannot run it: %s" % (label, ev.stderr.strip())):
        lm = json.loads(ev.stdout)["compare"]["mean_kl"]
        row["kl_lmkit"] = round(lm, 6)
        if scheme in WEIGHT_ONLY:
            c.expect(abs(hf - lm) <= 1e-3 * lm + 1e-5, "%s: transformers' mean KL %.5g, lmkit's %.5g" % (label, hf, lm))
        elif scheme.startswith("w8a8"):
            # Activation codes on a rounding boundary may round the other way in torch, and a MoE's top-k routing
            # amplifies that at the positions where a near-tie flips: the median position of the two quantized models
            # is held to 10% of their distance to float (the largest is recorded).
            c.expect(row["kl_lmkit_vs_transformers"] <= 0.1 * lm + 1e-5, "%s: KL(transformers || lmkit) %.4g "
                     "against KL(float || lmkit) %.4g" % (label, row["kl_lmkit_vs_transformers"], lm))
    # Dequantized load: weights within lmkit's reported error.
    dmodel, _, err = quiet_load(out, quantization_config=CompressedTensorsConfig(dequantize=True))
    if not c.expect(dmodel is not None, "%s: no dequantized load: %s" % (label, err)):
        return clean
    sd = dmodel.state_dict()
    worst = 0.0
    for name, bound in fused_bounds(report).items():
        if not c.expect(name in sd and name in fused_orig, "%s: %s is not in the model" % (label, name)):
            continue
        e = float(np.abs(sd[name].float().numpy().astype(np.float64) - fused_orig[name]).max())
        worst = max(worst, e / max(bound, 1e-30))
        c.expect(e <= bound * (1 + 1e-5) + 1e-7, "%s: %s dequantized is off by %.4g, lmkit's report says %.4g" % (
            label, name, e, bound))
    row["weight_err_vs_report"] = round(worst, 4)
    return clean


def run_moe(c, work):
    from safetensors.numpy import load_file
    rows, goldens = [], []
    calib = os.path.join(work, "moe_calib.npy")
    # Calibration tokens for GPTQ (ids < 256, every fixture's vocab): fixed, uint32.
    np.save(calib, (np.arange(8 * 33, dtype=np.uint32) * 37 + 5) % 253 + 3)
    for fx in [f for f in FIXTURES if not ONLY_FX or f in ONLY_FX]:
        src = fixture_dir(fx)
        model_type = json.load(open(os.path.join(src, "config.json")))["model_type"]
        saved = load_file(os.path.join(src, "model.safetensors"))
        layouts = {"fused": to_fused(saved, model_type), "per-expert": to_per_expert(saved, model_type)}
        as_saved = "fused" if is_fused(saved) else "per-expert"
        eval_npy = os.path.join(work, fx + "_eval.npy")
        run_lmkit("--quiet", "generate", src, "--prompt-ids", "1", "--max-tokens", NEW, "--temperature", "1", "--seed",
                  1, "--samples", SAMPLES, "-o", eval_npy)
        windows = np.load(eval_npy).astype(np.int64).reshape(SAMPLES, NEW + 1)
        for layout, tensors in layouts.items():
            if GOLDEN_ONLY and layout != as_saved:
                continue
            mdir = src if layout == as_saved else os.path.join(work, "%s_%s" % (fx, layout))
            if mdir != src:
                write_model(src, mdir, tensors)
            fused_orig = to_fused(tensors, model_type)
            fmodel, _, err = quiet_load(mdir)
            if not c.expect(fmodel is not None, "%s %s: the float model does not load: %s" % (fx, layout, err)):
                continue
            f_logits = logits(fmodel, windows)
            g = group_size(tensors)
            table = os.path.join(work, "%s_%s_calib.json" % (fx, layout))
            run_lmkit("--quiet", "calibrate", "--model", mdir, "--tokens", calib, "--seq-len", 33, "--method",
                      "minmax", "-o", table)
            for scheme in [s for s in SCHEMES if not ONLY or s in ONLY]:
                name, static = scheme.split("+")[0], scheme.endswith("+static")
                methods = ["rtn", "gptq"] if name in ("w8a16", "w8a8", "w4a16") and not static else ["rtn"]
                for method in methods[:1] if GOLDEN_ONLY else methods:
                    label = "%s %s %s %s" % (fx, layout, scheme, method)
                    out = os.path.join(work, re.sub(r"[^\w]+", "_", label))
                    args = ["--quiet", "quantize", mdir, "-o", out, "--scheme", name, "--report", out + ".json"]
                    if name == "w4a16":
                        args += ["--granularity", "group:%d" % g]
                    if static:
                        args += ["--calibration", table]
                    if method == "gptq":
                        args += ["--method", "gptq", "--calibration-tokens", calib, "--seq-len", 33]
                    row = {"fixture": fx, "layout": layout, "scheme": scheme, "method": method}
                    rows.append(row)
                    if check_checkpoint(c, label, row, args, mdir, eval_npy, windows, f_logits, fused_orig, scheme) \
                            and layout == as_saved and method == "rtn" and not static:
                        qc = json.load(open(os.path.join(out, "config.json")))["quantization_config"]
                        goldens.append({"fixture": fx, "args": [str(a) for a in args[5:7] + args[9:]],
                                        "tensors": key_list(out), "quantization_config": qc})
    c.details["moe"] = rows
    fmt = "%-18s %-10s %-17s %-5s %4s %4s %4s %10s %10s %10s %10s %8s"
    print(fmt % ("fixture", "layout", "scheme", "meth", "miss", "unex", "mism", "KL transf.", "KL lmkit", "max dlogit",
                 "KL(t||l)", "w/report"), file=sys.stderr)
    for r in rows:
        print(fmt % (r["fixture"], r["layout"], r["scheme"], r["method"], r.get("missing", "-"),
                     r.get("unexpected", "-"), r.get("mismatched", "-"), r.get("kl_transformers", "-"),
                     r.get("kl_lmkit", "-"), r.get("max_logit_diff", "-"), r.get("kl_lmkit_vs_transformers", "-"),
                     r.get("weight_err_vs_report", str(r.get("error", "-"))[:40])), file=sys.stderr)
    golden = os.environ.get("LMKIT_MOE_GOLDEN")
    if golden:
        import compressed_tensors
        import transformers
        doc = {"provenance": "written by scripts/interop/check_ct_moe.py (LMKIT_MOE_GOLDEN) from `lmkit quantize` "
                             "outputs that transformers %s + compressed-tensors %s loaded with 0 missing / 0 "
                             "unexpected keys and logits matching lmkit's" % (transformers.__version__,
                                                                               compressed_tensors.__version__),
               "checkpoints": goldens}
        if c.ok and goldens:
            with open(golden, "w") as f:
                json.dump(doc, f, indent=None, separators=(",", ":"))
                f.write("\n")
        else:
            c.fail("LMKIT_MOE_GOLDEN not written: the check failed")
    return c


def run():
    import compressed_tensors
    import torch
    import transformers
    torch.manual_seed(0)
    c = Check("compressed_tensors_moe")
    c.details.update(transformers=transformers.__version__, compressed_tensors=compressed_tensors.__version__,
                     torch=torch.__version__)
    return run_moe(c, workdir("ct-moe"))


if __name__ == "__main__":
    main("compressed_tensors_moe", run)
