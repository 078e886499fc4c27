"""Writes the small committed fixtures the CI tests use (CI has no torch):

  heldout.txt       an excerpt of the validation split (Austen, then KJV)
  heldout.ids       the Python tokenizer's ids for it (tests/demo compares the engine's)
  ref_logits.json   prompts' token ids, the positions checked, and the file below
  ref_logits.f32    PyTorch's float64 forward of the exported (F16-rounded) target
                    at those positions: little-endian float32, (rows, vocab)
"""

import argparse
import json
import os

import numpy as np
import torch

from bpe import Tokenizer
from model import Qwen3

PROMPTS = [
    "It is a truth universally acknowledged, that a single man in possession of a good fortune",
    "And God said, Let there be light: and there was light.",
    "<|im_start|>user\nWho is Mr. Darcy?<|im_end|>\n<|im_start|>assistant\n",
]
EXCERPT_BYTES = 10000  # per source, cut back to a paragraph end: about 3,000 tokens in all


def excerpt(val_text):
    docs = val_text.split("\n<|endoftext|>\n")
    austen, bible = docs[0], docs[6]  # corpus.py: six novels first, then the Bible

    def cut(d):
        return d[:EXCERPT_BYTES].rsplit("\n\n", 1)[0]
    return cut(austen) + "\n\n" + cut(bible) + "\n"


def exported_weights(ck):
    """The checkpoint as the GGUF holds it: matrices rounded to float16."""
    state = {}
    for k, v in ck["state"].items():
        state[k] = v.to(torch.float16).to(torch.float64) if v.dim() == 2 else v.to(torch.float64)
    return state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data")
    ap.add_argument("--ckpt", default="out/target.pt")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    tok = Tokenizer.load(os.path.join(a.data, "tokenizer.json"))
    text = excerpt(open(os.path.join(a.data, "val.txt"), encoding="utf-8").read())
    with open(os.path.join(a.out, "heldout.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    with open(os.path.join(a.out, "heldout.ids"), "w") as f:
        f.write(" ".join(str(i) for i in tok.encode(text)) + "\n")

    ck = torch.load(a.ckpt, map_location="cpu")
    model = Qwen3(ck["config"]).double()
    model.load_state_dict(exported_weights(ck))
    model.eval()
    manifest, rows = {"vocab": model.embed.weight.shape[0], "prompts": []}, []
    with torch.no_grad():
        for p in PROMPTS:
            ids = tok.encode(p)
            logits = model(torch.tensor([ids]))[0]
            pos = sorted({0, len(ids) // 2, len(ids) - 1})
            manifest["prompts"].append({"text": p, "ids": ids, "positions": pos})
            rows.extend(logits[i].numpy() for i in pos)
    np.asarray(rows, dtype="<f4").tofile(os.path.join(a.out, "ref_logits.f32"))
    with open(os.path.join(a.out, "ref_logits.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("fixtures: %d held-out tokens, %d reference logit rows" % (len(tok.encode(text)), len(rows)))


if __name__ == "__main__":
    main()
