#!/usr/bin/python3
"""Independent float64 reference of the Qwen3 forward pass (numpy only).

Written from the architecture description, not from the C engine; it shares
no code with it.  Weights come from gguf_ref.GGUFFile (exact dequantisation).

CLI:
  /usr/bin/python3 qwen3_ref.py --model M.gguf --prompt-ids 1,2,3 --n-gen 32 \
      --logits-out L.npy --ids-out ids.txt

writes the logits at every prompt position (n_prompt x n_vocab float64 .npy)
and the greedy continuation (argmax, EOS ignored) as whitespace-separated ids.

--dtype float32 runs the very same code with float32 activations, weights
and BLAS accumulation; it exists to *calibrate* how far an honest float32
implementation drifts from float64 (see README.md), never as the reference.

--act-quant q8 models the C engine's integer matmul path (its SIMD levels):
before every product with a Q8_0/Q4_0 weight the activation row is
quantised in blocks of 32, before a Q4_K/Q5_K/Q6_K weight in blocks of 256,
by the engine's documented rule (src/kernels/qact.h, restated in
quantize_act below) applied to the float32 value of the activation; the
product itself stays exact float64.  F32/F16/BF16 weights are unaffected.

act_bf16x2=True (compare.py, when `splash --version` says F32 weights multiply
bf16 hi/lo pairs: AMX) models F32 weights and their activations each split
into two bfloat16 and three of the four products (mm_bf16x2).
act_bf16_rows=N (compare.py, when `splash --version` reports it) models the
engine's bfloat16 path (AVX-512 BF16, src/kernels/qact.h ACT_BF16): in a
forward call of at least N tokens, before every product with an F16/BF16
weight, the activation row's float32 value and the weights are rounded to
bfloat16 (nearest even, subnormals to zero); the product stays float64.

kv_type="f16" (--kv-type f16; compare.py passes the engine's default, f16)
models the engine's half-precision KV cache (src/model/kv.h): every key,
after its norm and RoPE, and every value is rounded to float32 and then to
float16 (nearest even) when it enters the cache; attention reads the rounded
values, and everything else stays float64.  kv_type="q8_0" models the q8_0
cache instead: each 32 elements of a head vector, as float32, become one
GGUF Q8_0 block the way the engine's quantiser makes it (src/kernels/types.c:
d = max|x| / 127 and id = 1 / d in float32, q = round-half-even(x * id) in
float32, d stored as float16) and attention reads d * q.

REF_PERTURB=<name> deliberately breaks the reference, to prove that
compare.py can fail.  Names: see PERTURBATIONS below.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_ref  # noqa: E402

PERTURBATIONS = {
    "rope": "interleaved (GPT-J) RoPE pairing (2i, 2i+1) instead of NeoX (i, i+half)",
    "rope_theta": "RoPE base theta 10000 instead of the file's value (1e6 if the file says 10000)",
    "qknorm": "skip the per-head q/k RMSNorm",
    "causal": "causal mask off by one (each position also sees the next one)",
    "gqa": "query head j uses kv head j % n_kv instead of j // (n_head/n_kv)",
    "q8scale": "Q8_0 block scale taken from the neighbouring block",
    "silu": "FFN uses gate*up without the SiLU",
    "scale": "attention scores not divided by sqrt(head_dim)",
    "normw": "RMSNorm ignores its weight vector (x / rms only)",
    "decode_pos": "during token-by-token decoding the RoPE position is one too small",
}

ARCH = "qwen3"

# Activation block for the integer path, by weight type (0: none).
ACT_BLOCK = {gguf_ref.GGML_Q8_0: 32, gguf_ref.GGML_Q4_0: 32, gguf_ref.GGML_Q4_K: 256, gguf_ref.GGML_Q5_K: 256,
             gguf_ref.GGML_Q6_K: 256}
ACT_MIN_AMAX = np.float32(1e-30)


def round_bf16(x):
    """float32(x) rounded to bfloat16 as the engine's VCVTNEPS2BF16 does
    (nearest even, subnormal inputs to signed zero), returned as float64."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000).astype(np.uint32)
    r = np.where((u & 0x7f800000) == 0, (u & 0x80000000).astype(np.uint32), r)
    return r.view(np.float32).astype(np.float64)


def split_bf16x2(x):
    """float32(x) as hi, its bfloat16 rounding, and lo, the rounding of
    float32(x) - hi (exact in float32), both returned as float32 (their
    values exact in it): the engine's ACT_BF16X2 and packed F32 weights."""
    x32 = np.asarray(x, dtype=np.float32)
    hi = round_bf16(x32).astype(np.float32)
    return hi, round_bf16(x32 - hi).astype(np.float32)


def quantize_act(x, block):
    """The engine's activation quantiser, returned dequantised (float64).
    Per block of `block` float32 values: amax = max|x|; below 1e-30 the
    block is zero; else id = 127/amax and d = amax/127 (float32 divisions),
    q = round-half-even(x * id) (one float32 multiply)."""
    n = x.shape[0]
    x32 = np.asarray(x, dtype=np.float32).reshape(n, -1, block)
    amax = np.abs(x32).max(axis=-1, keepdims=True)
    ok = amax >= ACT_MIN_AMAX
    safe = np.where(ok, amax, np.float32(1))
    inv = np.float32(127) / safe
    q = np.where(ok, np.rint(x32 * inv), np.float32(0))
    d = np.where(ok, safe / np.float32(127), np.float32(0))
    return (q.astype(np.float64) * d.astype(np.float64)).reshape(x.shape)


def _kv(g, key, default=None):
    if key in g.kv:
        return g.kv[key]
    if default is None:
        raise gguf_ref.GGUFError("missing metadata key %s" % key)
    return default



def q8_0_round(x):
    """x (..., head_dim), head_dim a multiple of 32: quantised to Q8_0 blocks
    and back, in float32 as the engine's quantiser does (kernels/types.c)."""
    x32 = np.asarray(x, dtype=np.float32).reshape(-1, 32)
    amax = np.max(np.abs(x32), axis=1, keepdims=True)
    d = amax / np.float32(127.0)
    with np.errstate(divide="ignore"):
        inv = np.where(d > 0, np.float32(1.0) / d, np.float32(0.0)).astype(np.float32)
    q = np.rint(x32 * inv)  # float32 product, nearest even: lrintf
    dh = d.astype(np.float16).astype(np.float64)
    return (dh * q.astype(np.float64)).reshape(np.shape(x))

class Qwen3Ref(object):
    def __init__(self, path, dtype=np.float64, perturb=None, verbose=False, naive_accum=False, act_quant=False,
                 act_bf16_rows=0, kv_type="f32", act_bf16x2=False):
        self.dtype = np.dtype(dtype)
        self.kv_type = kv_type  # "f16": keys and values rounded as the engine's f16 cache stores them
        self.act_quant = act_quant
        self.act_bf16_rows = act_bf16_rows  # 0: the bfloat16 path is not modelled
        self.act_bf16x2 = act_bf16x2  # F32 weights on pairs of bfloat16 tiles (AMX), modelled
        self.act_block = {}  # id(weight array) -> activation block of the integer path
        self.naive_accum = naive_accum
        self.perturb = perturb if perturb is not None else os.environ.get("REF_PERTURB", "") or None
        if self.perturb and self.perturb not in PERTURBATIONS:
            raise ValueError("unknown REF_PERTURB %r (known: %s)" % (self.perturb, ", ".join(sorted(PERTURBATIONS))))
        self.verbose = verbose
        t0 = time.time()
        g = self.g = gguf_ref.GGUFFile(path)
        arch = _kv(g, "general.architecture")
        if arch != ARCH:
            raise gguf_ref.GGUFError("architecture %r, expected %r" % (arch, ARCH))
        self.n_layer = int(_kv(g, ARCH + ".block_count"))
        self.hidden = int(_kv(g, ARCH + ".embedding_length"))
        self.ffn = int(_kv(g, ARCH + ".feed_forward_length"))
        self.n_head = int(_kv(g, ARCH + ".attention.head_count"))
        self.n_kv = int(_kv(g, ARCH + ".attention.head_count_kv", self.n_head))
        self.head_dim = int(_kv(g, ARCH + ".attention.key_length", self.hidden // self.n_head))
        vdim = int(_kv(g, ARCH + ".attention.value_length", self.head_dim))
        if vdim != self.head_dim:
            raise gguf_ref.GGUFError("value_length %d != key_length %d" % (vdim, self.head_dim))
        self.theta = float(_kv(g, ARCH + ".rope.freq_base", 10000.0))
        self.eps = float(_kv(g, ARCH + ".attention.layer_norm_rms_epsilon"))
        self.n_ctx_train = int(_kv(g, ARCH + ".context_length", 0))
        if self.n_head % self.n_kv:
            raise gguf_ref.GGUFError("n_head %d not a multiple of n_kv %d" % (self.n_head, self.n_kv))
        if self.head_dim % 2:
            raise gguf_ref.GGUFError("odd head_dim")
        if self.perturb == "rope_theta":
            self.theta = 10000.0 if self.theta != 10000.0 else 1e6

        emb = g.tensors["token_embd.weight"]
        self._check(emb, (self.hidden, None))
        self.vocab = emb.ne[1]
        self.out_name = "output.weight" if "output.weight" in g.tensors else "token_embd.weight"
        self.tied = self.out_name == "token_embd.weight"
        self._check(g.tensors[self.out_name], (self.hidden, self.vocab))

        H, hd = self.hidden, self.head_dim
        self.output_norm = self._vec("output_norm.weight", H)
        self.layers = []
        for i in range(self.n_layer):
            p = "blk.%d." % i
            L = {
                "attn_norm": self._vec(p + "attn_norm.weight", H),
                "wq": self._mat(p + "attn_q.weight", H, self.n_head * hd),
                "wk": self._mat(p + "attn_k.weight", H, self.n_kv * hd),
                "wv": self._mat(p + "attn_v.weight", H, self.n_kv * hd),
                "q_norm": self._vec(p + "attn_q_norm.weight", hd),
                "k_norm": self._vec(p + "attn_k_norm.weight", hd),
                "wo": self._mat(p + "attn_output.weight", self.n_head * hd, H),
                "ffn_norm": self._vec(p + "ffn_norm.weight", H),
                "wgate": self._mat(p + "ffn_gate.weight", H, self.ffn),
                "wup": self._mat(p + "ffn_up.weight", H, self.ffn),
                "wdown": self._mat(p + "ffn_down.weight", self.ffn, H),
            }
            self.layers.append(L)
        # output projection: dequantised once, in chunks, into one array
        self.w_out = self._mat(self.out_name, H, self.vocab)

        half = hd // 2
        self.inv_freq = self.theta ** (-2.0 * np.arange(half, dtype=np.float64) / hd)
        norms = [self.output_norm] + [L[k] for L in self.layers for k in ("attn_norm", "q_norm", "k_norm", "ffn_norm")]
        self.all_norm_weights_one = all(bool(np.all(w == 1)) for w in norms)
        self.reset()
        if self.verbose:
            print("[ref] loaded %s: L=%d H=%d ffn=%d heads=%d/%d hd=%d vocab=%d theta=%g eps=%g tied=%s "
                  "dtype=%s perturb=%s (%.1fs)" % (
                      path, self.n_layer, H, self.ffn, self.n_head, self.n_kv, hd, self.vocab, self.theta,
                      self.eps, self.tied, self.dtype, self.perturb, time.time() - t0), file=sys.stderr)

    # ---- weight loading ------------------------------------------------
    def _check(self, ti, ne):
        if len(ti.ne) != len(ne) or any(e is not None and a != e for a, e in zip(ti.ne, ne)):
            raise gguf_ref.GGUFError("tensor %s has ne=%s, expected %s" % (ti.name, list(ti.ne), list(ne)))

    def _vec(self, name, n):
        ti = self.g.tensors[name]
        self._check(ti, (n,))
        return self.g.get(name).astype(self.dtype)

    def _mat(self, name, n_in, n_out):
        """Weight with ne=[n_in, n_out] -> numpy (n_out, n_in) so that y = W @ x."""
        ti = self.g.tensors[name]
        self._check(ti, (n_in, n_out))
        W = np.empty((n_out, n_in), dtype=self.dtype)
        step = max(1, (1 << 22) // n_in)
        for r0 in range(0, n_out, step):
            r1 = min(n_out, r0 + step)
            W[r0:r1] = self._rows(ti, r0, r1)
        self.act_block[id(W)] = ACT_BLOCK.get(ti.type, 0)
        if ti.type in (gguf_ref.GGML_F16, gguf_ref.GGML_BF16):
            if not hasattr(self, "bf16_weights"):
                self.bf16_weights = set()  # id(weight array) of the F16/BF16 ones
            self.bf16_weights.add(id(W))
        if ti.type == gguf_ref.GGML_F32:
            self.__dict__.setdefault("f32_weights", set()).add(id(W))
        return W

    def _rows(self, ti, r0, r1):
        if self.perturb == "q8scale" and ti.type == gguf_ref.GGML_Q8_0:
            rb = self.g.row_nbytes(ti.name)
            raw = self.g.raw(ti.name)[r0 * rb:r1 * rb]
            blocks = raw.view(gguf_ref.Q8_0_BLOCK)
            d = np.roll(blocks["d"].astype(np.float64), 1)[:, None]
            return (d * blocks["q"].astype(np.float64)).reshape(r1 - r0, ti.ne[0])
        return self.g.get_row_range(ti.name, r0, r1)

    def embed(self, tokens):
        for t in tokens:
            if not 0 <= int(t) < self.vocab:
                raise ValueError("token id %d out of range [0, %d)" % (t, self.vocab))
        ti = self.g.tensors["token_embd.weight"]
        return np.concatenate([self._rows(ti, int(t), int(t) + 1) for t in tokens]).astype(self.dtype)

    # ---- math ------------------------------------------------------------
    def kv_round(self, x):
        """A key or value as the engine's KV cache holds it (kv_type f16: float32, then float16;
        q8_0: float32, then Q8_0 blocks of 32 along the head)."""
        kv_type = getattr(self, "kv_type", "f32")
        if kv_type == "q8_0":
            return q8_0_round(x).astype(self.dtype)
        if kv_type != "f16":
            return x
        return x.astype(np.float32).astype(np.float16).astype(self.dtype)

    def rmsnorm(self, x, w):
        # over the last axis
        ms = np.mean(x * x, axis=-1, keepdims=True)
        y = x / np.sqrt(ms + self.dtype.type(self.eps))
        return y if self.perturb == "normw" else y * w

    def rope(self, x, positions):
        """x: (n, heads, hd); positions: (n,) ints.  NeoX pairing (i, i+half)."""
        hd = self.head_dim
        half = hd // 2
        ang = np.asarray(positions, dtype=np.float64)[:, None] * self.inv_freq[None, :]  # (n, half)
        cos = np.cos(ang).astype(self.dtype)[:, None, :]
        sin = np.sin(ang).astype(self.dtype)[:, None, :]
        out = np.empty_like(x)
        if self.perturb == "rope":
            a, b = x[..., 0::2], x[..., 1::2]
            out[..., 0::2] = a * cos - b * sin
            out[..., 1::2] = a * sin + b * cos
        else:
            a, b = x[..., :half], x[..., half:]
            out[..., :half] = a * cos - b * sin
            out[..., half:] = a * sin + b * cos
        return out

    def mm_bf16x2(self, x, W):
        """The AMX path of F32 weights (act_bf16x2): weights and activations
        each as hi + lo bfloat16 (split_bf16x2), y = hi_x hi_w + lo_x hi_w +
        hi_x lo_w, the products exact and summed in float64.  Every call
        takes it (decode too), so the split weights are kept."""
        cache = self.__dict__.setdefault("bf16x2_split", {})
        if id(W) not in cache:
            step = max(1, (1 << 22) // W.shape[1])
            parts = [split_bf16x2(W[r0:r0 + step]) for r0 in range(0, W.shape[0], step)]
            cache[id(W)] = (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        wh, wl = cache[id(W)]
        xh, xl = split_bf16x2(x)
        xh = xh.astype(self.dtype)
        # (hi_x + lo_x) hi_w + hi_x lo_w: the same exact products in float64, two matmuls
        return (xh + xl.astype(self.dtype)) @ wh.astype(self.dtype).T + xh @ wl.astype(self.dtype).T

    def mm(self, x, W):
        """x (n, in) times W (out, in)^T.  naive_accum: one running sum per
        output, accumulated strictly left to right in self.dtype (models the
        worst plausible C loop; calibration only)."""
        if getattr(self, "act_bf16x2", False) and id(W) in getattr(self, "f32_weights", ()):
            return self.mm_bf16x2(x, W)
        block = self.act_block.get(id(W), 0) if self.act_quant else 0
        if block:
            x = quantize_act(x, block).astype(self.dtype)
        bf16_rows = getattr(self, "act_bf16_rows", 0)
        n_batch = getattr(self, "batch_rows", x.shape[0])  # tokens in this forward call
        if bf16_rows and n_batch >= bf16_rows and id(W) in getattr(self, "bf16_weights", ()):
            x = round_bf16(x).astype(self.dtype)
            y = np.empty((x.shape[0], W.shape[0]), dtype=self.dtype)
            step = max(1, (1 << 22) // W.shape[1])  # rounded weights a chunk of rows at a time
            # every call rounds W (AMX: every call, decode too): once, kept
            # as float32 (bfloat16 values are exact in it), not per call
            if bf16_rows == 1:
                cache = self.__dict__.setdefault("bf16_rounded", {})
                if id(W) not in cache:
                    cache[id(W)] = np.concatenate([round_bf16(W[r0:r0 + step]).astype(np.float32)
                                                   for r0 in range(0, W.shape[0], step)])
                Wr = cache[id(W)]
                for r0 in range(0, W.shape[0], step):
                    y[:, r0:r0 + step] = x @ Wr[r0:r0 + step].astype(self.dtype).T
                return y
            for r0 in range(0, W.shape[0], step):
                y[:, r0:r0 + step] = x @ round_bf16(W[r0:r0 + step]).astype(self.dtype).T
            return y
        if not self.naive_accum:
            return x @ W.T
        WT = np.ascontiguousarray(W.T)
        y = np.zeros((x.shape[0], W.shape[0]), dtype=self.dtype)
        for k in range(WT.shape[0]):
            y += x[:, k:k + 1] * WT[k][None, :]
        return y

    @staticmethod
    def silu(z):
        return z / (1.0 + np.exp(-z))

    # ---- forward -----------------------------------------------------------
    def reset(self):
        self.pos = 0
        self.k_cache = [np.zeros((0, self.n_kv, self.head_dim), dtype=self.dtype) for _ in range(self.n_layer)]
        self.v_cache = [np.zeros((0, self.n_kv, self.head_dim), dtype=self.dtype) for _ in range(self.n_layer)]

    def forward(self, tokens, want_logits=True, last_only=False):
        """Append tokens at positions self.pos.. (KV cache) and return logits
        (n, vocab), or only for the last token if last_only, or None."""
        n = len(tokens)
        self.batch_rows = n  # the engine's matmul batch, even for last_only's one output row
        hd, nh, nkv = self.head_dim, self.n_head, self.n_kv
        group = nh // nkv
        p0 = self.pos
        positions = np.arange(p0, p0 + n)
        rope_pos = positions - 1 if (self.perturb == "decode_pos" and p0 > 0) else positions
        x = self.embed(tokens)  # (n, H)
        scale = self.dtype.type(1.0 if self.perturb == "scale" else 1.0 / np.sqrt(hd))
        T = p0 + n
        # mask[i, t]: query i (absolute p0+i) may attend key t
        shift = 1 if self.perturb == "causal" else 0
        mask = np.arange(T)[None, :] <= (positions[:, None] + shift)
        if self.perturb == "gqa":
            kv_of_head = np.arange(nh) % nkv
        else:
            kv_of_head = np.arange(nh) // group
        for li, L in enumerate(self.layers):
            h = self.rmsnorm(x, L["attn_norm"])
            q = (self.mm(h, L["wq"])).reshape(n, nh, hd)
            k = (self.mm(h, L["wk"])).reshape(n, nkv, hd)
            v = (self.mm(h, L["wv"])).reshape(n, nkv, hd)
            if self.perturb != "qknorm":
                q = self.rmsnorm(q, L["q_norm"])
                k = self.rmsnorm(k, L["k_norm"])
            q = self.rope(q, rope_pos)
            k = self.rope(k, rope_pos)
            K = self.k_cache[li] = np.concatenate([self.k_cache[li], self.kv_round(k)], axis=0)  # (T, nkv, hd)
            V = self.v_cache[li] = np.concatenate([self.v_cache[li], self.kv_round(v)], axis=0)
            Kh = K[:, kv_of_head, :]  # (T, nh, hd)
            Vh = V[:, kv_of_head, :]
            s = np.einsum("ihd,thd->hit", q, Kh) * scale  # (nh, n, T)
            s = np.where(mask[None, :, :], s, -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s)
            pr = e / e.sum(axis=-1, keepdims=True)
            o = np.einsum("hit,thd->ihd", pr, Vh).reshape(n, nh * hd)
            x = x + self.mm(o, L["wo"])
            h = self.rmsnorm(x, L["ffn_norm"])
            gate = self.mm(h, L["wgate"])
            up = self.mm(h, L["wup"])
            act = gate * up if self.perturb == "silu" else self.silu(gate) * up
            x = x + self.mm(act, L["wdown"])
        self.pos = T
        if not want_logits:
            return None
        if last_only:
            x = x[-1:]
        xn = self.rmsnorm(x, self.output_norm)
        return self.mm(xn, self.w_out)

    def run(self, prompt, n_gen):
        """Returns (prompt_logits (n_prompt, vocab), generated ids list)."""
        self.reset()
        logits = self.forward(prompt)
        ids = []
        last = logits[-1]
        for i in range(n_gen):
            t = int(np.argmax(last))
            ids.append(t)
            if i + 1 < n_gen:
                last = self.forward([t], last_only=True)[-1]
        return logits, ids

    def score_sequence(self, prompt, continuation):
        """Teacher-forced along the same path as run(): the prompt as one
        batch, then the continuation token by token.  Returns the logits that
        predict each continuation token (len(continuation) rows)."""
        self.reset()
        rows = [self.forward(prompt, last_only=True)[-1]]
        for t in continuation[:-1]:
            rows.append(self.forward([t], last_only=True)[-1])
        return np.array(rows)


def parse_ids(s):
    s = s.strip()
    if not s:
        return []
    return [int(t) for t in s.replace(",", " ").split()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    ap.add_argument("--n-gen", type=int, default=32)
    ap.add_argument("--logits-out", help="write prompt logits (n_prompt x n_vocab) here (.npy)")
    ap.add_argument("--logits-f32-out", help="also/instead write them as raw little-endian float32")
    ap.add_argument("--ids-out", help="write generated ids here")
    ap.add_argument("--dtype", choices=["float64", "float32"], default="float64",
                    help="float32 only for tolerance calibration")
    ap.add_argument("--act-quant", choices=["none", "q8"], default="none",
                    help="q8: model the engine's int8 activations (its SIMD levels)")
    ap.add_argument("--kv-type", choices=["f32", "f16", "q8_0"], default="f32",
                    help="f16: round keys and values as the engine's f16 KV cache stores them")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    prompt = parse_ids(a.prompt_ids)
    if not prompt:
        ap.error("empty prompt")
    t0 = time.time()
    m = Qwen3Ref(a.model, dtype=np.dtype(a.dtype), verbose=a.verbose, act_quant=a.act_quant == "q8",
                 kv_type=a.kv_type)
    logits, ids = m.run(prompt, a.n_gen)
    if a.logits_out:
        with open(a.logits_out, "wb") as f:
            np.save(f, logits.astype(np.float64))
    if a.logits_f32_out:
        logits.astype("<f4").tofile(a.logits_f32_out)
    if a.ids_out:
        with open(a.ids_out, "w") as f:
            f.write(" ".join(str(t) for t in ids) + "\n")
    if a.verbose:
        print("[ref] %d prompt + %d generated tokens in %.1fs: %s" % (
            len(prompt), len(ids), time.time() - t0, " ".join(map(str, ids))), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
