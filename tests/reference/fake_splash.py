#!/usr/bin/python3
"""TEST-ONLY stand-in for the splash binary (same CLI subset that compare.py
uses), built from gguf_testwriter.py + qwen3_ref.py (qwen35_ref.py for a
qwen35 file) running in float32.

It lets compare.py be exercised end to end without the C engine:
  /usr/bin/python3 tests/reference/compare.py --splash tests/reference/fake_splash.py ...
FAKE_PERTURB=<name> (names as REF_PERTURB) makes the fake compute wrongly,
which compare.py must then reject.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_testwriter  # noqa: E402
import qwen3_ref  # noqa: E402
import qwen35_ref  # noqa: E402


def main(argv):
    if len(argv) >= 2 and argv[0] == "model" and argv[1] == "synth":
        ap = argparse.ArgumentParser(prog="fake_splash model synth")
        ap.add_argument("--preset", default="tiny")
        ap.add_argument("--type", default="f32")
        ap.add_argument("--seed", type=int, default=0)
        ap.add_argument("--out", required=True)
        ap.add_argument("--layers", type=int)
        ap.add_argument("--vocab", type=int)
        a = ap.parse_args(argv[2:])
        gguf_testwriter.synth(a.out, a.preset, a.type, a.seed, a.layers, a.vocab)
        return 0
    if len(argv) >= 1 and argv[0] == "run":
        ap = argparse.ArgumentParser(prog="fake_splash run")
        ap.add_argument("--model", required=True)
        ap.add_argument("--prompt-ids", required=True)
        ap.add_argument("--max-tokens", type=int, default=32)
        ap.add_argument("--temperature", type=float, default=0.0)
        ap.add_argument("--ignore-eos", action="store_true")
        ap.add_argument("--logits-out")
        ap.add_argument("--ids-out")
        ap.add_argument("--kv-type", choices=["f32", "f16", "q8_0"], default="f16")
        ap.add_argument("--state-type", choices=["f32", "f16"], default="f32")
        a = ap.parse_args(argv[1:])
        extra = {"state_type": "f16", "gdn_chunk": 16} if a.state_type == "f16" else {}
        m = qwen35_ref.load(a.model, dtype=np.float32, perturb=os.environ.get("FAKE_PERTURB", ""),
                            kv_type=a.kv_type, **extra)
        logits, ids = m.run(qwen3_ref.parse_ids(a.prompt_ids), a.max_tokens)
        if a.logits_out:
            logits.astype("<f4").tofile(a.logits_out)
        if a.ids_out:
            with open(a.ids_out, "w") as f:
                f.write(" ".join(map(str, ids)) + "\n")
        else:
            print(" ".join(map(str, ids)))
        return 0
    print("usage: fake_splash.py model synth ... | run ...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
