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
4. qwen35 (qwen35_ref.py): the random qwen35 file reads back in every
   type; the gated delta rule against hand-computed numbers; chunked ==
   token-by-token recurrence (kernel and whole model, several chunk sizes,
   prompts longer than one chunk); prefill then decode == one prefill
   (conv, delta-rule and KV state carried), prefill in pieces == one piece,
   MTP rows batched == one at a time; float32 drift; the IMROPE sector
   rule; and each of those checks fails under a REF_PERTURB bug made for it.
   compare.py --model on a qwen35 file against the fake, honest and buggy.

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
import qwen35_ref as Q35  # noqa: E402

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
               ("a_q8", a, G.GGML_Q8_0), ("a_q4", a, G.GGML_Q4_0), ("v", v, G.GGML_F32)]
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
    # Q4_0: independent decode with struct, value l low nibble, l + 16 high nibble of byte l
    blob = W.encode(a, G.GGML_Q4_0)
    vals = []
    for i in range(0, len(blob), 18):
        d = struct.unpack("<e", blob[i:i + 2])[0]
        qs = blob[i + 2:i + 18]
        vals += [d * ((b & 15) - 8) for b in qs] + [d * ((b >> 4) - 8) for b in qs]
    check(np.array_equal(g.get("a_q4").reshape(-1), np.array(vals)), "Q4_0 exact (independent struct decode)")
    check(np.abs(g.get("a_q4") - a).max() <= np.abs(a).max() / 8 * 1.01,
          "Q4_0 close to source (the clipped side loses up to one step)")
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


QWEN35_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0")
PROMPT35 = [3, 17, 200, 5, 99, 42, 7, 7, 150, 1, 2, 250, 33, 64, 128, 9, 77, 31, 180]  # 19 > one chunk of 5 or 8


def rel(a, b):
    """max over rows of max|a - b| / max|b|."""
    a, b = np.atleast_2d(a), np.atleast_2d(b)
    return float((np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)).max())


def gdn_known_answer(perturb=None):
    """The delta rule on numbers worked by hand (one head, dk = dv = 2):
    t1: k=(1,0) v=(2,3) beta=.5 g=ln .5, S0 = 0: S1 = k (.5 (v - 0))^T = [[1, 1.5], [0, 0]],
        q=(1,0): o1 = S1^T q = (1, 1.5).
    t2: k=(.6,.8) v=(1,1) beta=1 g=ln .5: S' = .5 S1 = [[.5, .75], [0, 0]], S'^T k = (.3, .45),
        u = (.7, .55), S2 = S' + k u^T = [[.92, 1.08], [.56, .44]]; q=(0,1): o2 = (.56, .44).
    Returns the largest error of recurrent and chunked (chunk 2 and 1) against that."""
    q = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
    k = np.array([[[1.0, 0.0]], [[0.6, 0.8]]])
    v = np.array([[[2.0, 3.0]], [[1.0, 1.0]]])
    g = np.log(np.array([[0.5], [0.5]]))
    beta = np.array([[0.5], [1.0]])
    want_o = np.array([[[1.0, 1.5]], [[0.56, 0.44]]])
    want_s = np.array([[[0.92, 1.08], [0.56, 0.44]]])
    err = 0.0
    for f in (lambda S: Q35.delta_rule_recurrent(q, k, v, g, beta, S, perturb),
              lambda S: Q35.delta_rule_chunked(q, k, v, g, beta, S, 2, perturb),
              lambda S: Q35.delta_rule_chunked(q, k, v, g, beta, S, 1, perturb)):
        o, S = f(np.zeros((1, 2, 2)))
        err = max(err, np.abs(o - want_o).max(), np.abs(S - want_s).max())
    return err


def chunk_vs_recurrent(path, perturb=None, chunks=(1, 5, 8, 64)):
    """Whole model, prompt of 19: the chunked delta rule at each chunk size against the recurrence."""
    ref = Q35.Qwen35Ref(path, perturb=perturb, gdn_chunk=0).run(PROMPT35, 0)[0]
    worst = 0.0
    for c in chunks:
        worst = max(worst, rel(Q35.Qwen35Ref(path, perturb=perturb, gdn_chunk=c).run(PROMPT35, 0)[0], ref))
    return worst


def state_carry(path, perturb=None, gdn_chunk=8):
    """Prefill N then decode token by token, and prefill in pieces, against one prefill of all."""
    m = Q35.Qwen35Ref(path, perturb=perturb, gdn_chunk=gdn_chunk)
    full = m.forward(PROMPT35, m.new_state())
    st = m.new_state()
    head = m.forward(PROMPT35[:11], st)
    steps = [m.forward([t], st)[0] for t in PROMPT35[11:]]
    decode = rel(np.vstack([head] + steps), full)
    st = m.new_state()
    pieces = np.vstack([m.forward(PROMPT35[i:i + 6], st) for i in range(0, len(PROMPT35), 6)])
    return decode, rel(pieces, full)


def test_qwen35(tmp):
    print("qwen35:")
    paths = {}
    for t in QWEN35_TYPES:
        p = paths[t] = os.path.join(tmp, "q35_%s.gguf" % t)
        src = W.synth35(p, "tiny35", t, seed=11, tied=(t == "bf16"))  # bf16: LM head tied to token_embd
        g = G.GGUFFile(p)
        ok = g.kv["general.architecture"] == "qwen35" and g.kv["qwen35.block_count"] == 5 \
            and g.kv["qwen35.rope.dimension_sections"] == [2, 1, 1, 0] and len(g.tensors) == len(src)
        for name, arr, tt in src:
            ti = g.tensors[name]
            ok = ok and ti.shape == arr.shape and ti.type == tt
            if tt == G.GGML_F32:
                ok = ok and np.array_equal(g.get(name), arr.astype(np.float64))
            else:
                ok = ok and np.abs(g.get(name) - arr).max() <= np.abs(arr).max() / 7 + 1e-3
        g.close()
        check(ok, "%s qwen35 file reads back: metadata, %d tensors, shapes, types, values" % (t, len(src)))
    m = Q35.Qwen35Ref(paths["f32"])
    check([m.is_recurrent(i) for i in range(4)] == [True, True, True, False] and m.has_mtp
          and (m.nk, m.nv, m.dk, m.dv, m.n_rot) == (4, 8, 16, 16, 8) and not m.tied
          and Q35.Qwen35Ref(paths["bf16"]).tied, "layer kinds, GDN and rotary shapes, tied head without output.weight")

    # the IMROPE sector rule: with the real [11, 11, 10, 0] over 64 rotary dims every pair turns with
    # the text position; [1, 1, 2, 0] over 8 dims sends pair 3 (sector 3 % 3 == 0, not < 3) to the
    # e stream, whose position is 0 for text
    m.n_rot, m.sections = 64, [11, 11, 10, 0]
    a = m.rope_angles([5])
    check(np.allclose(a[0], 5 * m.theta ** (-np.arange(32) / 32.0)), "IMROPE [11,11,10,0]: every pair at position p")
    m.n_rot, m.sections = 8, [1, 1, 2, 0]
    a = m.rope_angles([5])
    check(a[0, 3] == 0 and np.all(a[0, :3] > 0), "IMROPE [1,1,2,0]: pair 3 in the e stream (position 0)")

    err = gdn_known_answer()
    check(err < 1e-14, "gated delta rule == hand-worked numbers (recurrent, chunk 2, chunk 1): %.2g" % err)
    err = gdn_known_answer("gdn-no-decay")
    check(err > 0.1, "... and REF_PERTURB=gdn-no-decay fails it (%.2g)" % err)
    rs = np.random.RandomState(4)
    n, H, dk, dv = 23, 3, 6, 5
    qk = rs.standard_normal((2, n, H, dk))
    qk /= np.linalg.norm(qk, axis=-1, keepdims=True)
    v = rs.standard_normal((n, H, dv))
    g = -rs.uniform(0.01, 1.5, (n, H))
    beta = rs.uniform(0.05, 1, (n, H))
    S0 = rs.standard_normal((H, dk, dv))
    o_r, s_r = Q35.delta_rule_recurrent(qk[0], qk[1], v, g, beta, S0)
    worst = 0.0
    for c in (1, 2, 4, 7, 23, 64):
        o_c, s_c = Q35.delta_rule_chunked(qk[0], qk[1], v, g, beta, S0, c)
        worst = max(worst, np.abs(o_c - o_r).max(), np.abs(s_c - s_r).max())
    check(worst < 1e-10, "kernel: chunked == recurrent, 23 tokens, chunks 1..64, nonzero start state: %.2g" % worst)

    for t in ("f32", "q4_0"):
        d = chunk_vs_recurrent(paths[t])
        check(d < 1e-10, "%s model: chunked (1, 5, 8, 64) == recurrent over 19 tokens: %.2g" % (t, d))
    d = chunk_vs_recurrent(paths["f32"], "gdn-chunk", chunks=(5,))
    check(d > 1e-3, "... and REF_PERTURB=gdn-chunk fails it (%.2g)" % d)
    for t in QWEN35_TYPES:
        dec, pieces = state_carry(paths[t])
        check(dec < 1e-10 and pieces < 1e-10,
              "%s prefill 11 + decode 8 == prefill 19 (%.2g); pieces of 6 == one (%.2g)" % (t, dec, pieces))
    dec, pieces = state_carry(paths["f32"], "gdn-conv-state")
    check(dec > 1e-3 and pieces > 1e-3, "... and REF_PERTURB=gdn-conv-state fails it (%.2g, %.2g)" % (dec, pieces))

    m = Q35.Qwen35Ref(paths["q8_0"])
    full = m.forward(PROMPT35, m.new_state())
    head = m.forward(PROMPT35[:7], m.new_state())
    check(rel(head, full[:7]) < 1e-12, "causal: prefix logits unchanged")
    logits, ids, mtp = m.run(PROMPT35, 4, want_mtp=True)
    st = m.new_state()
    hid = m.forward(PROMPT35, st, want_hidden=True)[1]
    mst = m.new_state()
    rows = np.vstack([m.mtp_forward([PROMPT35[i + 1]], hid[i:i + 1], mst) for i in range(len(PROMPT35) - 1)])
    check(mtp.shape == (18, 256) and rel(rows, mtp) < 1e-10 and np.all(np.isfinite(mtp)),
          "MTP draft logits: 18 rows, one at a time (own KV cache) == batched")
    bad = Q35.Qwen35Ref(paths["q8_0"], perturb="mtp-concat").run(PROMPT35, 0, want_mtp=True)[2]
    check(rel(bad, mtp) > 0.1, "MTP concat order matters (mtp-concat moves the drafts by %.2g)" % rel(bad, mtp))

    l32, i32 = Q35.Qwen35Ref(paths["f32"], dtype=np.float32).run(PROMPT35, 16)
    l64, i64 = Q35.Qwen35Ref(paths["f32"]).run(PROMPT35, 16)
    r = rel(l32, l64)
    check(r < 1e-5 and i32 == i64, "float32 drift %.2g, greedy ids equal" % r)
    return paths


def test_compare35(tmp, paths):
    print("compare.py --model qwen35 vs fake_splash.py:")
    cmd = [sys.executable, os.path.join(HERE, "compare.py"), "--splash", os.path.join(HERE, "fake_splash.py"),
           "--model", paths["q8_0"], "--n-gen", "8", "--workdir", os.path.join(tmp, "cmp35")]
    env = dict(os.environ)
    env.pop("REF_PERTURB", None)
    env.pop("FAKE_PERTURB", None)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    check(r.returncode == 0 and r.stdout.startswith("PASS"), "honest fake passes: " + r.stdout.splitlines()[-1])
    for bug in ("gdn-head-map", "gdn-conv-state"):
        env["FAKE_PERTURB"] = bug
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        check(r.returncode == 1 and "FAIL" in r.stdout, "fake with bug %s rejected" % bug)


def main():
    with tempfile.TemporaryDirectory(prefix="splash-refself-") as tmp:
        test_reader(tmp)
        test_forward(tmp)
        test_compare(tmp)
        paths = test_qwen35(tmp)
        test_compare35(tmp, paths)
    print("selftest: %s" % ("FAIL (%d)" % len(FAILS) if FAILS else "all ok"))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
