#!/usr/bin/env python3
"""The llm-compressor side of bench/model.sh's calibration row: llm-compressor's `oneshot` calibration run on the same
model and token windows as `lmkit calibrate --model`, in the CPU path (fp32 transformers model).
Recipe: QuantizationModifier with static per-tensor int8 input activations (min-max observers, what `lmkit calibrate
--method minmax` records for every Linear input) and per-channel int8 weights, lm_head ignored; every window is one
calibration sample. Times the oneshot call only (the model is loaded before; nothing is saved).
Usage: model_llmc.py MODEL_DIR TOKENS.npy SEQ_LEN THREADS
Prints one JSON line: seconds, tokens, versions. Run with the llm-compressor venv (its python sees the heavy venv's
torch/transformers through a .pth overlay)."""
import json
import sys
import time

import numpy as np
import torch


def main():
    model_dir, tokens, seq, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    import llmcompressor
    import transformers
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    cfg = json.load(open(model_dir + "/config.json"))
    ids = np.load(tokens).astype(np.int64)
    calib = ids[: len(ids) // seq * seq].reshape(-1, seq)
    ds = Dataset.from_dict({"input_ids": calib.tolist(), "attention_mask": np.ones_like(calib).tolist()})
    # Pre-tokenized data: any tokenizer over the vocabulary will do.
    vocab = {"t%d" % i: i for i in range(cfg["vocab_size"])}
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="t0")),
                                               unk_token="t0", pad_token="t0")
    group = {"targets": ["Linear"],
             "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"},
             "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "tensor",
                                   "dynamic": False, "observer": "minmax"}}
    recipe = QuantizationModifier(config_groups={"group_0": group}, ignore=["lm_head"])
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    t0 = time.perf_counter()
    c0 = time.process_time()
    oneshot(model=model, dataset=ds, recipe=recipe, max_seq_length=seq, num_calibration_samples=len(calib),
            processor=tok)
    print(json.dumps({"seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
                      "tokens": int(calib.size), "llmcompressor": llmcompressor.__version__,
                      "torch": torch.__version__, "transformers": transformers.__version__}))


if __name__ == "__main__":
    main()
