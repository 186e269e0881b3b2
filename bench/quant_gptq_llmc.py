#!/usr/bin/env python3
"""The llm-compressor side of bench/quant_gptq.sh: the whole `oneshot` W8A8 recipe of llm-compressor's
quantization_w8a8_int8 example (SmoothQuantModifier(0.8) then GPTQModifier(W8A8, ignore lm_head)) on a model directory
and token windows, on CPU with a fixed thread count, saving the compressed checkpoint. The process is timed from outside
(/usr/bin/time -v), import and model load included, as lmkit's whole `quantize` process is.
Usage: quant_gptq_llmc.py MODEL_DIR TOKENS.npy SAMPLES SEQ_LEN THREADS OUT_DIR
Prints one JSON line with the versions."""
import json
import sys

import numpy as np
import torch


def main():
    model_dir, tokens, samples, seq, threads, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
        int(sys.argv[5]), sys.argv[6]
    torch.set_num_threads(threads)
    import compressed_tensors
    import llmcompressor
    import transformers
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import GPTQModifier
    from llmcompressor.modifiers.transform import SmoothQuantModifier
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel

    cfg = json.load(open(model_dir + "/config.json"))
    ids = np.load(tokens).astype(np.int64)
    calib = ids[: samples * seq].reshape(samples, seq)
    ds = Dataset.from_dict({"input_ids": calib.tolist(), "attention_mask": np.ones_like(calib).tolist()})
    # Pre-tokenized data: any tokenizer over the vocabulary will do.
    vocab = {"t%d" % i: i for i in range(cfg["vocab_size"])}
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="t0")),
                                               unk_token="t0", pad_token="t0")
    recipe = [SmoothQuantModifier(smoothing_strength=0.8), GPTQModifier(scheme="W8A8", ignore=["lm_head"])]
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    oneshot(model=model, dataset=ds, recipe=recipe, max_seq_length=seq, num_calibration_samples=samples,
            processor=tok, output_dir=out)
    print(json.dumps({"tokens": int(calib.size), "llmcompressor": llmcompressor.__version__,
                      "torch": torch.__version__, "transformers": transformers.__version__,
                      "compressed_tensors": compressed_tensors.__version__}))


if __name__ == "__main__":
    main()
