"""Check 6 (model_families): for every family of scripts/model-fixtures.py, a fresh random checkpoint (other seed, twice
the width of the committed fixtures) made and saved by the installed transformers. lmkit's logits must be within 1e-4
of transformers' at every position: for each prefix length p (1 .. T-1), `lmkit generate --json --logits` on the first
p ids and one greedy id gives the logits at position p, compared with transformers' forward of the same p ids and then
of the greedy id through its cache;
its greedy continuation must equal transformers' generate(do_sample=False), and `lmkit eval`'s mean NLL must be within
1e-4 of transformers'. LMKIT_INTEROP_FAMILIES=a,b limits it to those families."""
import importlib.util
import os

import numpy as np

from common import REPO, Check, run_lmkit, workdir

SEED = 7
SCALE = 2
PROMPT = 40
NEW = 8


def fixtures_module():
    spec = importlib.util.spec_from_file_location("model_fixtures", os.path.join(REPO, "scripts", "model-fixtures.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def run():
    import torch
    fx = fixtures_module()
    c = Check("model_families")
    root = workdir("families")
    torch.set_num_threads(2)
    only = [n for n in os.environ.get("LMKIT_INTEROP_FAMILIES", "").split(",") if n]
    for name in fx.families(SCALE):
        if only and name not in only:
            continue
        d = fx.write(name, root, SEED, SCALE)
        model, _ = fx.build(name, SEED, SCALE)
        # lmkit refuses sequences past max_position_embeddings (llama_dynamic's 32; its fixture covers past it).
        tokens = np.load(os.path.join(d, "tokens.npy")).astype(np.int64)[:model.config.max_position_embeddings]
        prompt = min(PROMPT, len(tokens) - NEW)
        out = run_lmkit("generate", d, "--prompt-ids", ",".join(map(str, tokens[:prompt])), "--max-tokens", NEW,
                        json_out=True)
        seq = out["sequences"][0]
        delta, worst = 0.0, 0
        with torch.no_grad():
            ids = torch.tensor([tokens[:prompt].tolist()])
            ref = model.generate(ids, max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0,
                                 eos_token_id=None)[0].tolist()
            for p in range(1, len(tokens)):
                one = run_lmkit("generate", d, "--prompt-ids", ",".join(map(str, tokens[:p])), "--max-tokens", 1,
                                "--logits", json_out=True)
                # As lmkit computes it: the prefix in one pass, then the greedy id through the KV cache (phi3's
                # longrope switches factors at 33 tokens, and a cached prefix keeps its short-factor keys).
                seq1 = one["sequences"][0]
                pre = model(torch.tensor([seq1[:-1]]), use_cache=True)
                cache = pre.cache if hasattr(pre, "cache") else pre.past_key_values
                ref_logits = model(torch.tensor([seq1[-1:]]), cache=cache).logits[0, -1].double().numpy()
                dp = float(np.max(np.abs(np.asarray(one["final_logits"], dtype=np.float64) - ref_logits)))
                if dp > delta:
                    delta, worst = dp, p
            full = model(torch.tensor([tokens.tolist()])).logits[0].double()
            nll = torch.nn.functional.cross_entropy(full[:-1], torch.tensor(tokens[1:])).item()
        np.save(os.path.join(root, name + ".ids.npy"), tokens.astype(np.uint32))
        ev = run_lmkit("eval", d, "--tokens", os.path.join(root, name + ".ids.npy"), json_out=True)
        c.details[name] = {"max_abs_logit_delta": delta, "worst_position": worst, "positions": len(tokens) - 1,
                           "greedy_equal": seq == ref, "nll_lmkit": ev["mean_nll"], "nll_transformers": nll}
        c.expect(delta <= 1e-4, "%s: max |logit delta| %.3g > 1e-4 (position %d)" % (name, delta, worst))
        c.expect(seq == ref, "%s: greedy ids differ: lmkit %s, transformers %s" % (name, seq[prompt:], ref[prompt:]))
        c.expect(abs(ev["mean_nll"] - nll) <= 1e-4, "%s: mean NLL %.6f vs transformers %.6f" % (name, ev["mean_nll"],
                                                                                               nll))
    return c
