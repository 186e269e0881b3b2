"""Regenerates tiny-hf5/: one tiny randomly initialised checkpoint per model_type, saved by transformers 5.24, keeping
its config.json and the exact number of elements in its safetensors (the count lmkit must reproduce).
Run with the heavy venv: python make_tiny.py  (writes <model_type>.json beside this file and prints the counts)."""
import json, os, sys, tempfile

import torch
from safetensors import safe_open
from transformers import AutoConfig, AutoModelForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
COMMON = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
              intermediate_size=96, vocab_size=128, max_position_embeddings=256)
FAMILIES = {
    "gpt2": dict(n_embd=64, n_layer=2, n_head=4, vocab_size=128, n_positions=64),
    "gpt_neox": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                     vocab_size=128, max_position_embeddings=256),
    "falcon": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=128),
    "llama": dict(COMMON),
    "mistral": dict(COMMON),
    "mixtral": dict(COMMON, num_local_experts=4, num_experts_per_tok=2),
    "qwen2": dict(COMMON),
    "qwen2_moe": dict(COMMON, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                      shared_expert_intermediate_size=48),
    "qwen3": dict(COMMON, head_dim=16),
    "qwen3_moe": dict(COMMON, head_dim=16, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32),
    "gemma2": dict(COMMON, head_dim=16),
    "gemma3_text": dict(COMMON, head_dim=16),
    "phi3": dict(COMMON, pad_token_id=0, bos_token_id=1, eos_token_id=2),
    "olmo2": dict(COMMON),
    "deepseek_v2": dict(COMMON, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                        moe_intermediate_size=32, first_k_dense_replace=1, q_lora_rank=None, kv_lora_rank=32,
                        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16),
    "deepseek_v3": dict(COMMON, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, n_group=1,
                        topk_group=1, moe_intermediate_size=32, first_k_dense_replace=1, q_lora_rank=24,
                        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16),
    # Layer 1 of 2 is MoE (interleave step 2); layer 0 a dense MLP of intermediate_size_mlp.
    "llama4_text": dict(COMMON, head_dim=16, num_local_experts=4, num_experts_per_tok=1, intermediate_size_mlp=80,
                        interleave_moe_layer_step=2),
    "gpt_oss": dict(COMMON, head_dim=16, num_local_experts=4, num_experts_per_tok=2, sliding_window=8),
}


def main():
    torch.manual_seed(0)
    counts = {}
    for t, kw in FAMILIES.items():
        cfg = AutoConfig.for_model(t, **kw)
        model = AutoModelForCausalLM.from_config(cfg)
        with tempfile.TemporaryDirectory() as d:
            model.save_pretrained(d)
            n = 0
            for f in sorted(os.listdir(d)):
                if f.endswith(".safetensors"):
                    with safe_open(os.path.join(d, f), "pt") as st:
                        for k in st.keys():
                            shape = st.get_slice(k).get_shape()
                            n += int(torch.tensor(shape, dtype=torch.int64).prod()) if shape else 1
            with open(os.path.join(d, "config.json")) as fh:
                config = json.load(fh)
        with open(os.path.join(HERE, t + ".json"), "w") as fh:
            json.dump(config, fh, indent=1, sort_keys=True)
            fh.write("\n")
        counts[t] = n
        print(t, n, file=sys.stderr)
    print(json.dumps(counts, indent=1, sort_keys=True))  # the golden counts params_test.cpp holds


if __name__ == "__main__":
    main()
