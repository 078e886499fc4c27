"""Checks of the committed demo model against fixtures written by the
training pipeline (models/demo/fixtures.py), for CI without torch:

  tokenizer  the engine's ids for heldout.txt equal the pipeline tokenizer's
  logits     the engine's logits equal PyTorch's float64 forward of the same
             (F16-rounded) weights at the positions in ref_logits.json

usage: check_demo.py tokenizer|logits --splash BIN --model GGUF --dir models/demo
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

# max |engine - torch| / max |torch| per position. Both sides compute with the
# same weight values (every F16 value is exact in float32 and float64), so
# only the engine's float32 rounding separates them: ~1e-6 per layer, measured
# well under 1e-4 for the six layers. A wrong norm, RoPE pairing or head
# mapping moves this by more than 5e-2.
TOL_REL = 5e-4


def check_tokenizer(a):
    text = open(os.path.join(a.dir, "heldout.txt"), encoding="utf-8").read()
    want = [int(x) for x in open(os.path.join(a.dir, "heldout.ids")).read().split()]
    out = subprocess.run([a.splash, "tokenize", "--model", a.model, "--no-parse-special", "--jsonl"],
                         input=json.dumps(text) + "\n", capture_output=True, text=True, check=True).stdout
    got = json.loads(out.splitlines()[0])
    if got == want:
        print("tokenizer: ok, %d ids match" % len(want))
        return 0
    i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
    print("tokenizer: FAIL at id %d (engine %s, pipeline %s; lengths %d, %d)" %
          (i, got[i:i + 5], want[i:i + 5], len(got), len(want)))
    return 1


def check_logits(a):
    man = json.load(open(os.path.join(a.dir, "ref_logits.json")))
    vocab = man["vocab"]
    ref = np.fromfile(os.path.join(a.dir, "ref_logits.f32"), dtype="<f4").reshape(-1, vocab)
    row, worst, bad = 0, 0.0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for p in man["prompts"]:
            out = os.path.join(tmp, "logits.f32")
            subprocess.run([a.splash, "run", "--model", a.model, "--max-tokens", "1", "--quiet", "--prompt-ids",
                            ",".join(map(str, p["ids"])), "--logits-out", out], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            got = np.fromfile(out, dtype="<f4").reshape(len(p["ids"]), vocab)
            for pos in p["positions"]:
                r, g = ref[row].astype(np.float64), got[pos].astype(np.float64)
                rel = np.abs(g - r).max() / np.abs(r).max()
                same_top = int(np.argmax(g)) == int(np.argmax(r))
                worst = max(worst, rel)
                if rel > TOL_REL or not same_top:
                    bad += 1
                    print("logits: FAIL %r position %d: rel %.3g, argmax engine %d torch %d" %
                          (p["text"][:30], pos, rel, int(np.argmax(g)), int(np.argmax(r))))
                row += 1
    print("logits: %d rows, worst relative error %.3g (tolerance %.0e) -> %s" %
          (row, worst, TOL_REL, "ok" if not bad else "FAIL"))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["tokenizer", "logits"])
    ap.add_argument("--splash", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    sys.exit(check_tokenizer(a) if a.what == "tokenizer" else check_logits(a))


if __name__ == "__main__":
    main()
