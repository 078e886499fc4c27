"""The draft model's greedy agreement with the target on held-out text: the
share of positions where both models' most likely next token is the same
(teacher-forced on the text), computed through the engine
(`splash run --prompt-ids ... --logits-out`) in windows of 512 tokens.

usage: agreement.py SPLASH TARGET.gguf DRAFT.gguf IDS_FILE [MAX_TOKENS]
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

WINDOW = 512


def argmaxes(splash, model, ids, tmp):
    out = os.path.join(tmp, "l.f32")
    subprocess.run([splash, "run", "--model", model, "--max-tokens", "1", "--quiet", "--temperature", "0",
                    "--prompt-ids", ",".join(map(str, ids)), "--logits-out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return np.fromfile(out, dtype="<f4").reshape(len(ids), -1).argmax(axis=1)


def main():
    splash, target, draft, ids_file = sys.argv[1:5]
    ids = [int(x) for x in open(ids_file).read().split()]
    if len(sys.argv) > 5:
        ids = ids[:int(sys.argv[5])]
    same = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        for s in range(0, len(ids), WINDOW):
            w = ids[s:s + WINDOW]
            a, b = argmaxes(splash, target, w, tmp), argmaxes(splash, draft, w, tmp)
            same += int((a == b).sum())
            total += len(w)
    print("agreement %.4f (%d of %d positions)" % (same / total, same, total))


if __name__ == "__main__":
    main()
