"""TEST-ONLY GGUF v3 writer and random Qwen3 / Qwen3.5 model synthesisers.

Used to exercise gguf_ref.py / qwen3_ref.py / compare.py without the C
engine (see selftest.py and fake_splash.py).  Not a reference for anything.
"""

import struct

import numpy as np

import gguf_ref as G

_FMT = {G.T_U8: "<B", G.T_I8: "<b", G.T_U16: "<H", G.T_I16: "<h", G.T_U32: "<I", G.T_I32: "<i",
        G.T_F32: "<f", G.T_BOOL: "<?", G.T_U64: "<Q", G.T_I64: "<q", G.T_F64: "<d"}


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _val(vtype, v):
    if vtype in _FMT:
        return struct.pack(_FMT[vtype], v)
    if vtype == G.T_STR:
        return _str(v)
    if vtype == G.T_ARR:
        etype, items = v
        out = struct.pack("<IQ", etype, len(items))
        for it in items:
            out += _val(etype, it)
        return out
    raise ValueError(vtype)


def encode(arr, ggml_type):
    """float array (numpy shape reversed(ne)) -> bytes in ggml_type."""
    a = np.ascontiguousarray(arr, dtype=np.float32).reshape(-1)
    if ggml_type == G.GGML_F32:
        return a.astype("<f4").tobytes()
    if ggml_type == G.GGML_F16:
        return a.astype("<f2").tobytes()
    if ggml_type == G.GGML_BF16:
        u = a.view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16  # round to nearest even
        return u.astype("<u2").tobytes()
    if ggml_type == G.GGML_Q8_0:
        b = a.reshape(-1, G.QK8_0)
        amax = np.abs(b).max(axis=1)
        d = (amax / 127.0).astype(np.float16)
        df = d.astype(np.float32)
        inv = np.where(df != 0, 1.0 / np.where(df != 0, df, 1), 0)
        q = np.clip(np.round(b * inv[:, None]), -127, 127).astype(np.int8)
        blk = np.empty(b.shape[0], dtype=G.Q8_0_BLOCK)
        blk["d"] = d
        blk["q"] = q
        return blk.tobytes()
    if ggml_type == G.GGML_Q4_0:
        # d = (the signed value of largest magnitude) / -8, q = round(x/d) + 8 clipped to 0..15;
        # byte l holds value l (low nibble) and value l + 16 (high nibble)
        b = a.reshape(-1, G.QK4_0)
        idx = np.abs(b).argmax(axis=1)
        mx = b[np.arange(b.shape[0]), idx]
        d = (mx / -8.0).astype(np.float16)
        df = d.astype(np.float32)
        inv = np.where(df != 0, 1.0 / np.where(df != 0, df, 1), 0)
        q = np.clip(np.round(b * inv[:, None]) + 8, 0, 15).astype(np.uint8)
        blk = np.empty(b.shape[0], dtype=G.Q4_0_BLOCK)
        blk["d"] = d
        blk["qs"] = q[:, :16] | (q[:, 16:] << 4)
        return blk.tobytes()
    raise ValueError(ggml_type)


def write_gguf(path, kvs, tensors, alignment=32):
    """kvs: list of (key, vtype, value); tensors: list of (name, ndarray, ggml_type)."""
    head = G.GGUF_MAGIC + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, t, v in kvs:
        head += _str(k) + struct.pack("<I", t) + _val(t, v)
    blobs = []
    off = 0
    infos = b""
    for name, arr, tt in tensors:
        ne = list(reversed(arr.shape))
        data = encode(arr, tt)
        infos += _str(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", tt, off)
        pad = (-len(data)) % alignment
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    hdr = head + infos
    hdr += b"\0" * ((-len(hdr)) % alignment)
    with open(path, "wb") as f:
        f.write(hdr)
        for b in blobs:
            f.write(b)


PRESETS = {
    "tiny": dict(hidden=64, layers=2, heads=4, kv=2, head_dim=16, ffn=128, vocab=512,
                 theta=10000.0, eps=1e-6, tied=False, ctx=2048),
    "qwen3-0.6b": dict(hidden=1024, layers=28, heads=16, kv=8, head_dim=128, ffn=3072, vocab=151936,
                       theta=1e6, eps=1e-6, tied=True, ctx=40960),
}

TYPES = {"f32": G.GGML_F32, "f16": G.GGML_F16, "bf16": G.GGML_BF16, "q8_0": G.GGML_Q8_0, "q4_0": G.GGML_Q4_0}


def synth(path, preset="tiny", type_name="f32", seed=0, layers=None, vocab=None):
    p = dict(PRESETS[preset])
    if layers:
        p["layers"] = layers
    if vocab:
        p["vocab"] = vocab
    tt = TYPES[type_name]
    rng = np.random.RandomState(seed)
    H, hd, F, V = p["hidden"], p["head_dim"], p["ffn"], p["vocab"]

    def mat(n_out, n_in):
        return (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    A = "qwen3."
    kvs = [("general.architecture", G.T_STR, "qwen3"),
           ("general.name", G.T_STR, "testwriter-" + preset),
           ("general.alignment", G.T_U32, 32),
           (A + "block_count", G.T_U32, p["layers"]),
           (A + "context_length", G.T_U32, p["ctx"]),
           (A + "embedding_length", G.T_U32, H),
           (A + "feed_forward_length", G.T_U32, F),
           (A + "attention.head_count", G.T_U32, p["heads"]),
           (A + "attention.head_count_kv", G.T_U32, p["kv"]),
           (A + "attention.key_length", G.T_U32, hd),
           (A + "attention.value_length", G.T_U32, hd),
           (A + "rope.freq_base", G.T_F32, p["theta"]),
           (A + "attention.layer_norm_rms_epsilon", G.T_F32, p["eps"]),
           ("tokenizer.ggml.model", G.T_STR, "gpt2"),
           ("test.nested", G.T_ARR, (G.T_ARR, [(G.T_I32, [1, 2]), (G.T_I32, [3])])),
           ("test.f64", G.T_F64, 0.5),
           ("test.bool", G.T_BOOL, True)]
    emb = rng.standard_normal((V, H)).astype(np.float32)
    tensors = [("token_embd.weight", emb, tt), ("output_norm.weight", norm(H), G.GGML_F32)]
    if not p["tied"]:
        tensors.append(("output.weight", mat(V, H), tt))
    for i in range(p["layers"]):
        b = "blk.%d." % i
        tensors += [
            (b + "attn_norm.weight", norm(H), G.GGML_F32),
            (b + "attn_q.weight", mat(p["heads"] * hd, H), tt),
            (b + "attn_k.weight", mat(p["kv"] * hd, H), tt),
            (b + "attn_v.weight", mat(p["kv"] * hd, H), tt),
            (b + "attn_q_norm.weight", norm(hd), G.GGML_F32),
            (b + "attn_k_norm.weight", norm(hd), G.GGML_F32),
            (b + "attn_output.weight", mat(H, p["heads"] * hd), tt),
            (b + "ffn_norm.weight", norm(H), G.GGML_F32),
            (b + "ffn_gate.weight", mat(F, H), tt),
            (b + "ffn_up.weight", mat(F, H), tt),
            (b + "ffn_down.weight", mat(H, F), tt),
        ]
    write_gguf(path, kvs, tensors)
    return tensors


# Qwen3.5 (qwen35): 4 main layers with full_attention_interval 4 -> layers 0-2 Gated DeltaNet,
# layer 3 full attention; block 4 is the NextN/MTP block.  4 key heads, 8 value heads so that
# the tiled value-head order matters; sections sum to rope_dim / 2 = 4 ([2, 1, 1, 0] keeps every
# rotary pair on the text position, as the real [11, 11, 10, 0] does for 64 rotary dims).
PRESETS35 = {
    "tiny35": dict(hidden=64, layers=4, nextn=1, interval=4, heads=4, kv=2, head_dim=32, rope_dim=8,
                   sections=[2, 1, 1, 0], ffn=128, conv=4, state=16, k_heads=4, v_heads=8, v_dim=16,
                   vocab=256, theta=1e7, eps=1e-6, tied=False, ctx=4096),
}


def synth35(path, preset="tiny35", type_name="f32", seed=0, tied=None, vocab=None):
    """A random qwen35 file in the layout of /work/shared/facts/qwen35-gguf.md (numpy shapes
    (rows, cols) = reversed ne).  type_name applies to every matrix except ssm_conv1d (F32, as
    llama.cpp's converter keeps it); vectors are F32.  Norm weights are spread around 1 (they are
    plain multipliers in the file); ssm_a = -exp(A_log) < 0."""
    p = dict(PRESETS35[preset])
    if tied is not None:
        p["tied"] = tied
    if vocab:
        p["vocab"] = vocab
    tt = TYPES[type_name]
    rng = np.random.RandomState(seed)
    H, hd, F, V = p["hidden"], p["head_dim"], p["ffn"], p["vocab"]
    nh, nkv = p["heads"], p["kv"]
    dk, nk, nv, dv = p["state"], p["k_heads"], p["v_heads"], p["v_dim"]
    Dk, Dv = dk * nk, dv * nv
    conv_dim = 2 * Dk + Dv
    n_main = p["layers"]
    n_all = n_main + p["nextn"]

    def mat(n_out, n_in):
        return (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    A = "qwen35."
    kvs = [("general.architecture", G.T_STR, "qwen35"),
           ("general.name", G.T_STR, "testwriter-" + preset),
           ("general.alignment", G.T_U32, 32),
           (A + "block_count", G.T_U32, n_all),
           (A + "context_length", G.T_U32, p["ctx"]),
           (A + "embedding_length", G.T_U32, H),
           (A + "feed_forward_length", G.T_U32, F),
           (A + "attention.head_count", G.T_U32, nh),
           (A + "attention.head_count_kv", G.T_U32, nkv),
           (A + "attention.key_length", G.T_U32, hd),
           (A + "attention.value_length", G.T_U32, hd),
           (A + "attention.layer_norm_rms_epsilon", G.T_F32, p["eps"]),
           (A + "rope.freq_base", G.T_F32, p["theta"]),
           (A + "rope.dimension_count", G.T_U32, p["rope_dim"]),
           (A + "rope.dimension_sections", G.T_ARR, (G.T_I32, p["sections"])),
           (A + "ssm.conv_kernel", G.T_U32, p["conv"]),
           (A + "ssm.state_size", G.T_U32, dk),
           (A + "ssm.group_count", G.T_U32, nk),
           (A + "ssm.time_step_rank", G.T_U32, nv),
           (A + "ssm.inner_size", G.T_U32, Dv),
           (A + "full_attention_interval", G.T_U32, p["interval"]),
           (A + "nextn_predict_layers", G.T_U32, p["nextn"]),
           ("tokenizer.ggml.model", G.T_STR, "gpt2")]
    emb = rng.standard_normal((V, H)).astype(np.float32)
    tensors = [("token_embd.weight", emb, tt), ("output_norm.weight", norm(H), G.GGML_F32)]
    if not p["tied"]:
        tensors.append(("output.weight", mat(V, H), tt))

    def attn(b):
        return [(b + "attn_q.weight", mat(2 * nh * hd, H), tt),
                (b + "attn_k.weight", mat(nkv * hd, H), tt),
                (b + "attn_v.weight", mat(nkv * hd, H), tt),
                (b + "attn_output.weight", mat(H, nh * hd), tt),
                (b + "attn_q_norm.weight", norm(hd), G.GGML_F32),
                (b + "attn_k_norm.weight", norm(hd), G.GGML_F32)]

    def common(b):
        return [(b + "attn_norm.weight", norm(H), G.GGML_F32),
                (b + "post_attention_norm.weight", norm(H), G.GGML_F32),
                (b + "ffn_gate.weight", mat(F, H), tt),
                (b + "ffn_up.weight", mat(F, H), tt),
                (b + "ffn_down.weight", mat(H, F), tt)]

    for i in range(n_main):
        b = "blk.%d." % i
        tensors += common(b)
        if (i + 1) % p["interval"] == 0:
            tensors += attn(b)
        else:
            a_log = np.log(rng.uniform(1.0, 16.0, nv))
            tensors += [
                (b + "attn_qkv.weight", mat(conv_dim, H), tt),
                (b + "attn_gate.weight", mat(Dv, H), tt),
                (b + "ssm_conv1d.weight", (0.5 * rng.standard_normal((conv_dim, p["conv"]))).astype(np.float32),
                 G.GGML_F32),
                (b + "ssm_dt.bias", (rng.standard_normal(nv) - 2.0).astype(np.float32), G.GGML_F32),
                (b + "ssm_a", (-np.exp(a_log)).astype(np.float32), G.GGML_F32),
                (b + "ssm_beta.weight", mat(nv, H), tt),
                (b + "ssm_alpha.weight", mat(nv, H), tt),
                (b + "ssm_norm.weight", norm(dv), G.GGML_F32),
                (b + "ssm_out.weight", mat(H, Dv), tt),
            ]
    for i in range(n_main, n_all):
        b = "blk.%d." % i
        tensors += common(b) + attn(b) + [
            (b + "nextn.eh_proj.weight", mat(H, 2 * H), tt),
            (b + "nextn.enorm.weight", norm(H), G.GGML_F32),
            (b + "nextn.hnorm.weight", norm(H), G.GGML_F32),
            (b + "nextn.shared_head_norm.weight", norm(H), G.GGML_F32)]
    write_gguf(path, kvs, tensors)
    return tensors
