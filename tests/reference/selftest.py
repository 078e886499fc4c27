#!/usr/bin/python3
"""Self-test of the reference itself, needing no C binary (a few seconds):

1. GGUF reader round trip: files written by the test-only writer
   (gguf_testwriter.py) in every type read back with the exact values
   (F16/BF16/Q8_0 decoded independently here, bit for bit), metadata of
   every value type including nested arrays, 1-D/2-D tensors, row access.
2. Forward-pass invariants: batched prompt == token-by-token decoding,
   the causal mask (later tokens do not change earlier logits), and
   float32 vs float64 drift far below compare.py's tolerance.
3. compare.py end to end against fake_splash.py: passes when honest, and
   fails (exit 1) when the fake is given a deliberate bug.

  /usr/bin/python3 tests/reference/selftest.py
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_ref as G  # noqa: E402
import gguf_testwriter as W  # noqa: E402
import qwen3_ref as Q  # noqa: E402

FAILS = []


def check(cond, what):
    print("  %s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        FAILS.append(what)


def test_reader(tmp):
    print("reader:")
    rs = np.random.RandomState(0)
    a = (rs.standard_normal((3, 64)) * 3).astype(np.float32)
    a[0, :32] = 0.0  # an all-zero Q8_0 block
    v = rs.standard_normal(64).astype(np.float32)
    kvs = [("general.architecture", G.T_STR, "x"), ("general.alignment", G.T_U32, 64),
           ("u8", G.T_U8, 250), ("i8", G.T_I8, -5), ("u16", G.T_U16, 65000), ("i16", G.T_I16, -300),
           ("i32", G.T_I32, -7), ("f32", G.T_F32, 1.5), ("b", G.T_BOOL, False), ("u64", G.T_U64, 2 ** 40),
           ("i64", G.T_I64, -2 ** 40), ("f64", G.T_F64, 0.1), ("s", G.T_STR, "h\u00e9llo"),
           ("arr", G.T_ARR, (G.T_STR, ["a", "bc", ""])),
           ("nest", G.T_ARR, (G.T_ARR, [(G.T_U8, [1, 2]), (G.T_F32, [0.5])]))]
    tensors = [("a_f32", a, G.GGML_F32), ("a_f16", a, G.GGML_F16), ("a_bf16", a, G.GGML_BF16),
               ("a_q8", a, G.GGML_Q8_0), ("v", v, G.GGML_F32)]
    p = os.path.join(tmp, "rt.gguf")
    W.write_gguf(p, kvs, tensors, alignment=64)
    g = G.GGUFFile(p)
    check(g.alignment == 64 and g.data_start % 64 == 0, "alignment 64 honoured")
    want = {"u8": 250, "i8": -5, "u16": 65000, "i16": -300, "i32": -7, "f32": 1.5, "b": False,
            "u64": 2 ** 40, "i64": -2 ** 40, "f64": 0.1, "s": "h\u00e9llo", "arr": ["a", "bc", ""],
            "nest": [[1, 2], [0.5]]}
    check(all(g.kv[k] == w for k, w in want.items()), "metadata of every value type, nested arrays")
    check(g.tensors["a_q8"].ne == (64, 3) and g.get("a_q8").shape == (3, 64), "ne order -> numpy shape")
    check(np.array_equal(g.get("a_f32"), a.astype(np.float64)), "F32 exact")
    check(np.array_equal(g.get("a_f16"), a.astype(np.float16).astype(np.float64)), "F16 exact")
    # BF16: independent decode, bit by bit: sign, exponent, mantissa
    raw = np.frombuffer(W.encode(a, G.GGML_BF16), dtype="<u2").astype(np.int64)
    s = np.where(raw >> 15, -1.0, 1.0)
    e = (raw >> 7) & 0xFF
    m = raw & 0x7F
    bf = s * np.where(e == 0, m / 128.0 * 2.0 ** -126, (1 + m / 128.0) * 2.0 ** (e - 127))
    check(np.array_equal(g.get("a_bf16").reshape(-1), bf), "BF16 exact (independent bit decode)")
    check(np.abs(g.get("a_bf16") - a).max() <= np.abs(a).max() * 2 ** -8, "BF16 close to source")
    # Q8_0: independent decode with struct
    import struct
    blob = W.encode(a, G.GGML_Q8_0)
    vals = []
    for i in range(0, len(blob), 34):
        d = struct.unpack("<e", blob[i:i + 2])[0]
        vals += [d * q for q in struct.unpack("<32b", blob[i + 2:i + 34])]
    check(np.array_equal(g.get("a_q8").reshape(-1), np.array(vals)), "Q8_0 exact (independent struct decode)")
    check(np.abs(g.get("a_q8") - a).max() <= np.abs(a).max() / 127 * 0.51 + 1e-3, "Q8_0 close to source")
    check(np.array_equal(g.get_rows("a_q8", [2, 0]), g.get("a_q8")[[2, 0]]), "get_rows")
    check(np.array_equal(g.get_row_range("a_bf16", 1, 3), g.get("a_bf16")[1:3]), "get_row_range")
    check(np.array_equal(g.get("v"), v), "1-D tensor")
    g.close()
    # rejections
    for name, mutate in [("bad magic", lambda b: b"GGUX" + b[4:]),
                         ("version 2", lambda b: b[:4] + b"\x02\0\0\0" + b[8:]),
                         ("truncated", lambda b: b[:len(b) // 2])]:
        q = os.path.join(tmp, "bad.gguf")
        with open(p, "rb") as f:
            data = f.read()
        with open(q, "wb") as f:
            f.write(mutate(data))
        try:
            G.GGUFFile(q)
            check(False, "rejects " + name)
        except G.GGUFError:
            check(True, "rejects " + name)


def test_forward(tmp):
    print("forward:")
    for t in ("f32", "q8_0"):
        p = os.path.join(tmp, "tiny_%s.gguf" % t)
        W.synth(p, "tiny", t, seed=5)
        m = Q.Qwen3Ref(p)
        prompt = [3, 17, 200, 5, 99, 42, 7, 7, 150, 1, 2, 250, 33, 64, 128, 9]
        full = m.run(prompt, 0)[0]
        m.reset()
        steps = np.array([m.forward([tok])[-1] for tok in prompt])
        check(np.abs(full - steps).max() <= 1e-12 * np.abs(full).max(), "%s batched prompt == token by token" % t)
        m.reset()
        head = m.forward(prompt[:5])
        check(np.abs(head - full[:5]).max() <= 1e-12 * np.abs(full).max(), "%s causal: prefix logits unchanged" % t)
        l32, i32 = Q.Qwen3Ref(p, dtype=np.float32).run(prompt, 32)
        l64, i64 = m.run(prompt, 32)
        rel = (np.abs(l32 - l64).max(1) / np.abs(l64).max(1)).max()
        check(rel < 1e-5, "%s float32 drift %.2g well below tolerance" % (t, rel))


def test_compare(tmp):
    print("compare.py vs fake_splash.py:")
    cmd = [sys.executable, os.path.join(HERE, "compare.py"), "--splash", os.path.join(HERE, "fake_splash.py"),
           "--preset", "tiny", "--type", "q8_0", "--workdir", os.path.join(tmp, "cmp")]
    env = dict(os.environ)
    env.pop("REF_PERTURB", None)
    env.pop("FAKE_PERTURB", None)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    check(r.returncode == 0 and r.stdout.startswith("PASS"), "honest fake passes: " + r.stdout.splitlines()[-1])
    for bug in ("rope", "gqa", "causal", "q8scale", "decode_pos"):
        env["FAKE_PERTURB"] = bug
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        check(r.returncode == 1 and "FAIL" in r.stdout, "fake with bug %s rejected" % bug)
    env.pop("FAKE_PERTURB")
    env["REF_PERTURB"] = "rope"
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    check(r.returncode == 1, "REF_PERTURB=rope makes compare.py fail")


def main():
    with tempfile.TemporaryDirectory(prefix="splash-refself-") as tmp:
        test_reader(tmp)
        test_forward(tmp)
        test_compare(tmp)
    print("selftest: %s" % ("FAIL (%d)" % len(FAILS) if FAILS else "all ok"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
