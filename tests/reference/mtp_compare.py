#!/usr/bin/env python3
"""The MTP (NextN) block of a qwen35 file: splash's logits against the
float64 reference (qwen35_ref.py, mtp_forward), teacher-forced at every
prompt row but the last (row p: the main model's output-normed state at p
with the prompt's token p + 1), from `splash run --mtp-logits-out`.

  /usr/bin/python3 tests/reference/mtp_compare.py --splash build/splash [--preset qwen35-tiny]
      [--type f32] [--n-prompt 40] [--seed 5] [--synth-arg=...] [--cpu generic]

Passes when every row's max |C - ref| / max |ref| is within the engine's
tolerance for the type (compare.py's table) and every row's argmax agrees;
and, so that the check can fail, the reference with REF_PERTURB=mtp-concat
(the halves of [e ; h] swapped) must not."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402
import qwen35_ref  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splash", required=True)
    ap.add_argument("--preset", default="qwen35-tiny")
    ap.add_argument("--type", default="f32", choices=compare.TYPES)
    ap.add_argument("--n-prompt", type=int, default=40)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--synth-arg", action="append", default=[])
    ap.add_argument("--cpu", help="cap the engine's kernel level (SPLASH_CPU), e.g. generic: no int8 activations")
    a = ap.parse_args()
    if a.cpu:
        os.environ["SPLASH_CPU"] = a.cpu
    splash = os.path.abspath(a.splash)
    with tempfile.TemporaryDirectory(prefix="splash-mtp-") as wd:
        model = os.path.join(wd, "m.gguf")
        subprocess.run([splash, "model", "synth", "--preset", a.preset, "--type", a.type, "--seed", str(a.seed),
                        "--out", model] + a.synth_arg, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        ref = qwen35_ref.Qwen35Ref(model)
        if not ref.has_mtp:
            print("FAIL: the synthesised %s file has no MTP block" % a.preset)
            return 1
        prompt = compare.make_prompt(a.seed, a.n_prompt, ref.vocab)
        out = os.path.join(wd, "mtp.f32")
        subprocess.run([splash, "run", "--model", model, "--prompt-ids", ",".join(map(str, prompt)), "--max-tokens",
                        "0", "--mtp-logits-out", out], check=True, stdout=subprocess.DEVNULL)
        c = np.fromfile(out, dtype=np.float32).astype(np.float64)
        if c.size != (len(prompt) - 1) * ref.vocab:
            print("FAIL: %d floats, want %d x %d" % (c.size, len(prompt) - 1, ref.vocab))
            return 1
        c = c.reshape(len(prompt) - 1, ref.vocab)
        r = ref.run(prompt, 0, want_mtp=True)[2]
        bad = qwen35_ref.Qwen35Ref(model, perturb="mtp-concat").run(prompt, 0, want_mtp=True)[2]
    tol = compare.tolerance(a.type, ref.n_layer + 1)
    _, _, rel = compare.row_rel_err(c, r)
    _, _, rel_bad = compare.row_rel_err(c, bad)
    agree = int(np.sum(np.argmax(c, 1) == np.argmax(r, 1)))
    tag = "%s/%s n_prompt=%d" % (a.preset, a.type, a.n_prompt)
    print("%s: MTP logits max rel err %.3g (tolerance %.3g), argmax %d/%d; against the perturbed reference %.3g" % (
        tag, rel.max(), tol, agree, len(prompt) - 1, rel_bad.max()))
    if rel.max() > tol or agree != len(prompt) - 1:
        print("FAIL %s" % tag)
        return 1
    if rel_bad.max() <= tol:
        print("FAIL %s: the perturbed reference passes too, so this check cannot fail" % tag)
        return 1
    print("PASS %s" % tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
