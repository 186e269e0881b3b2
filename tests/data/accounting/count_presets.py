"""Counts the parameters of the issue-42 presets with transformers itself (the heavy venv: transformers 5.24), on the
meta device (no memory, no weights): the golden figures of params_test.cpp. Language model and vision tower + projector
are printed apart. Run: python count_presets.py <repo>/data/models. Written for lmkit."""
import json, os, sys

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForImageTextToText

NAMES = ["llama-4-scout", "llama-4-maverick", "gpt-oss-20b", "gpt-oss-120b", "mistral-large-2", "gemma-3-27b",
         "gemma-3-4b"]


def main():
    models = sys.argv[1]
    out = {}
    for name in NAMES:
        with open(os.path.join(models, name + ".json")) as fh:
            cfg_dict = json.load(fh)
        cfg_dict.pop("quantization_config", None)
        cfg = AutoConfig.for_model(**cfg_dict)
        multimodal = hasattr(cfg, "vision_config")
        with torch.device("meta"):
            model = (AutoModelForImageTextToText if multimodal else AutoModelForCausalLM).from_config(cfg)
        total = vision = 0
        for n, p in model.named_parameters(remove_duplicate=True):
            total += p.numel()
            if "vision" in n or "multi_modal_projector" in n:
                vision += p.numel()
        out[name] = {"language_model": total - vision, "vision_and_projector": vision, "total": total}
        print(name, out[name], file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
