#!/usr/bin/python3
"""Independent float64 reference of the Qwen3.5 (`qwen35`) hybrid forward pass.

Written from the maths and the public facts below, not from the C engine;
numpy only, weights from gguf_ref.GGUFFile (exact dequantisation).  Every
fact is cited as file (repository).  "llama.cpp" is ggml-org/llama.cpp,
"HF" is huggingface/transformers src/transformers/models/qwen3_5/
modeling_qwen3_5.py.

Layers.  Layer il < n_layer (= block_count - nextn_predict_layers) is full
attention iff (il + 1) % full_attention_interval == 0, else Gated DeltaNet
(GDN) (src/models/qwen35.cpp load_arch_hparams, llama.cpp).  Every layer:
    x += mixer(rmsnorm(x, attn_norm))
    x += ffn_down(silu(ffn_gate h) * ffn_up h),  h = rmsnorm(x, post_attention_norm)
then rmsnorm(x, output_norm) and the LM head (`output.weight`, or
`token_embd.weight` when absent) (qwen35.cpp graph()).  RMSNorm is
x / sqrt(mean(x^2) + eps) * w.  Every norm weight in the file is a plain
multiplier: the converter adds +1 to every `*norm.weight` except the GDN
output norm `linear_attn.norm` (Qwen3NextModel.modify_tensors,
convert_hf_to_gguf.py, llama.cpp), whose HF weight is already a plain
multiplier (Qwen3_5RMSNormGated, HF).

Full attention (qwen35.cpp build_layer_attn; Qwen3_5Attention, HF):
  * attn_q gives 2*hd rows per head: hd query rows, then hd gate rows.
  * q, k: per-head RMSNorm with attn_q_norm / attn_k_norm, then RoPE.
  * RoPE: ggml_rope_multi with rope type IMROPE (llama_model_rope_type:
    LLM_ARCH_QWEN35 -> LLAMA_ROPE_TYPE_IMROPE, llama.cpp) over the first
    n_rot = rope.dimension_count dims of each head; dims n_rot.. pass
    through unrotated.  Pairs are NeoX style, (i, i + n_rot/2) (ggml-cpu
    rope: `is_neox || is_mrope` pairs src[0] with src[n_dims/2]).  Pair i
    has angle pos_s * theta^(-2i/n_rot), where the position stream s comes
    from the interleaved sector rule (ggml_mrope_cache_init, is_imrope):
    sector = i % sum(sections); s = h if sector%3==1 and sector < 3*sec[1],
    w if sector%3==2 and sector < 3*sec[2], t if sector%3==0 and
    sector < 3*sec[0], else e.  For text tokens the four streams are
    (t, h, w, e) = (p, p, p, 0) (llm_graph_input_pos::set_input,
    llama-graph.cpp: "the 3 first dims are the same, and 4th dim is all 0").
    So for the real sections [11, 11, 10, 0] every pair turns with p: plain
    partial NeoX RoPE, which is what HF does for text (Qwen3_5TextRotary
    Embedding: equal t/h/w position ids, rotate_half over the first
    rotary_dim dims).  A pair that lands in stream e (possible with other
    sections) does not turn; this reference follows the rule as written.
  * GQA: query head j uses kv head j // (nh / nkv); causal softmax of
    q.k / sqrt(hd); the output (nh*hd) is multiplied by sigmoid(gate)
    element-wise before attn_output.

Gated DeltaNet (qwen35.cpp build_layer_attn_linear, delta-net-base.cpp;
Qwen3_5GatedDeltaNet, HF).  dk = ssm.state_size, nk = ssm.group_count,
nv = ssm.time_step_rank, dv = ssm.inner_size / nv, Dk = nk*dk, Dv = nv*dv:
  * qkv = attn_qkv h (conv_dim = 2 Dk + Dv channels, laid out q | k | v).
  * causal depthwise conv, no bias (ggml_ssm_conv): with X = [conv_state
    (K-1 rows, oldest first); qkv rows], y[t, c] = sum_i X[t+i, c] w[c, i]
    (w = ssm_conv1d, numpy (conv_dim, K); tap K-1 meets the current
    token).  The new conv state is the last K-1 rows of X (build_conv_state).
    A fresh sequence starts from zeros.  Then SiLU.
  * split q (nk, dk) | k (nk, dk) | v (nv, dv); q, k L2-normalised per head
    as x / max(||x||, eps), eps = the RMS eps (ggml_l2_norm:
    scale = 1/fmaxf(sqrtf(sum), eps), ggml-cpu ops.cpp; HF's rsqrt(sum+1e-6)
    differs only for near-zero vectors); then q *= 1/sqrt(dk)
    (build_delta_net_*: scale = 1/sqrtf(S_k); HF: query / sqrt(dk)).
  * beta = sigmoid(ssm_beta h) (nv); g = ssm_a * softplus(ssm_alpha h +
    ssm_dt.bias) (nv), the log decay (<= 0); ssm_a in the file is
    -exp(A_log) (Qwen3NextModel.modify_tensors: `-torch.exp(A_log)`).
  * Value head j uses key head j % nk: the converter stores value heads
    tiled, [K0v0, K1v0, ..., K0v1, K1v1, ...] (_LinearAttentionVReorderBase,
    convert_hf_to_gguf.py, for attn_qkv's v rows, attn_gate, ssm_beta,
    ssm_alpha, ssm_a, ssm_dt, the conv's v channels and ssm_out's columns)
    so that ggml_repeat_4d (a tiling) broadcasts q, k (qwen35.cpp).  HF
    itself groups them (repeat_interleave, j // (nv/nk)).
  * The gated delta rule, state S (dk x dv) per value head, zero at start:
        S <- exp(g_t) S
        S <- S + k_t (beta_t (v_t - S^T k_t))^T
        o_t = S^T q_t
    (torch_recurrent_gated_delta_rule, HF; build_delta_net_autoregressive,
    llama.cpp, which keeps the same state transposed: ggml ne [k index
    (contiguous), v index, head], i.e. numpy (nv, dv, dk); only a state
    snapshot format would see the difference).
  * o = rmsnorm(o, ssm_norm) (per head over dv, same eps) * silu(z),
    z = attn_gate h (nv, dv) (build_norm_gated; Qwen3_5RMSNormGated);
    then ssm_out.

The chunked (WY / UT transform) form of the same rule, derived here from
the recurrence, for one chunk of C tokens starting from state S0, with
G_t = sum_{s<=t} g_s (within the chunk):
    S_t = e^{G_t} S0 + sum_{s<=t} e^{G_t-G_s} k_s u_s^T,
    u_t = beta_t (v_t - e^{G_t} S0^T k_t - sum_{s<t} e^{G_t-G_s} (k_t.k_s) u_s)
so with A[t,s] = beta_t e^{G_t-G_s} (k_t.k_s) for s < t (0 elsewhere) and
T = (I + A)^-1:  U = T diag(beta) V - T diag(beta e^G) K S0,
    O = diag(e^G) Q S0 + (M o Q K^T) U,  M[t,s] = e^{G_t-G_s} for s <= t,
    S_C = e^{G_C} S0 + (diag(e^{G_C - G}) K)^T U.
(The same decomposition as torch_chunk_gated_delta_rule, HF, and
build_delta_net_chunking, llama.cpp, chunk 64.)  gdn_chunk=0 runs the
token-by-token recurrence; both must agree to ~1e-12 in float64.

NextN / MTP block (block index n_layer; qwen35.cpp graph_mtp):
    e = rmsnorm(embed(next token), nextn.enorm)
    h = rmsnorm(hidden, nextn.hnorm), hidden = the main model's state after
        output_norm at the same row (graph(): t_h_nextn = the output_norm
        result)
    x = nextn.eh_proj [e ; h]          (ggml_concat(e_norm, h_norm, 0): e first)
    x = full-attention decoder block of layer n_layer on x (own KV cache)
    logits = LM head(rmsnorm(x, nextn.shared_head_norm or output_norm)),
             head = nextn.shared_head_head if present, else the main head.
The RoPE position of an MTP row is a caller's choice here (mtp_forward's
`positions`); by default the position of the hidden row it extends, as in
vLLM's MTP proposer (target positions, next tokens).  llama.cpp's MTP
draft loop was not read for this.

CLI (as qwen3_ref.py):
  /usr/bin/python3 qwen35_ref.py --model M.gguf --prompt-ids 1,2,3 --n-gen 32 \\
      --logits-out L.npy --ids-out ids.txt [--gdn-chunk 64] [--prefill-chunk N]
      [--mtp-out D.npy]

REF_PERTURB=<name> deliberately breaks the reference (see PERTURBATIONS).
"""

import argparse
import copy
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_ref  # noqa: E402
import qwen3_ref  # noqa: E402

ARCH = "qwen35"
GDN_CHUNK_DEFAULT = 64  # llama.cpp's chunk for the gated delta rule (build_delta_net_chunking, CS = 64)

PERTURBATIONS = {
    "gdn-no-decay": "the delta-rule state is never decayed (g = 0)",
    "gdn-head-map": "value head j uses key head j // (nv/nk) (HF's grouped order) instead of j % nk",
    "gdn-no-l2": "q and k are not L2-normalised",
    "gdn-qscale": "q is not scaled by 1/sqrt(dk)",
    "gdn-chunk": "the chunked form carries the start state to the chunk's end without its decay e^{G_C} "
                 "(seen from the third chunk of a call, and at every decode step)",
    "gdn-beta": "beta is taken as 1 (no sigmoid(ssm_beta x) write strength)",
    "gdn-conv-flip": "the conv taps are applied in reverse time order",
    "gdn-conv-state": "the conv state is not carried from one forward call to the next",
    "gdn-norm-plus1": "the GDN output norm weight gets +1 (the converter does not add it there)",
    "attn-gate": "the full-attention output gate sigmoid(g) is left out",
    "attn-gate-layout": "attn_q read as [all query rows | all gate rows] instead of per head",
    "rope-full": "RoPE over the whole head instead of rope.dimension_count dims",
    "rope-gptj": "RoPE pairs (2i, 2i+1) instead of NeoX (i, i + n_rot/2)",
    "mtp-concat": "MTP concatenates [hidden ; embedding] instead of [embedding ; hidden]",
}


def not_seen_by_compare(name, n_prompt=None):
    """Why compare.py (prompt logits, greedy ids) cannot see perturbation `name`, or None."""
    if name == "mtp-concat":
        return "compare.py does not compare the MTP drafts (the selftest checks this one)"
    return None


def _kv(g, key, default=None):
    if key in g.kv:
        return g.kv[key]
    if default is None:
        raise gguf_ref.GGUFError("missing metadata key %s" % key)
    return default


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


def l2norm(x, eps):
    """x / max(||x||, eps) over the last axis (ggml_l2_norm)."""
    n = np.sqrt(np.sum(x * x, axis=-1, keepdims=True))
    return x / np.maximum(n, eps)


# ---- the gated delta rule, two ways -----------------------------------------------------
def delta_rule_recurrent(q, k, v, g, beta, S, perturb=None, rnd=None):
    """Token by token.  q, k: (n, H, dk) (already normalised and scaled);
    v: (n, H, dv); g, beta: (n, H); S: (H, dk, dv), updated copy returned.
    Returns (o (n, H, dv), S).  perturb: a PERTURBATIONS name or None.
    rnd: None, or how S is rounded where the engine stores it (after every
    token, o taken before: the engine's --state-type f16)."""
    if perturb == "gdn-no-decay":
        g = np.zeros_like(g)
    S = S.copy()
    o = np.empty_like(v)
    for t in range(q.shape[0]):
        S *= np.exp(g[t])[:, None, None]                      # S <- e^g S
        kv = np.einsum("hkv,hk->hv", S, k[t])                 # S^T k
        u = beta[t][:, None] * (v[t] - kv)                    # beta (v - S^T k)
        S += k[t][:, :, None] * u[:, None, :]                 # S + k u^T
        o[t] = np.einsum("hkv,hk->hv", S, q[t])               # S^T q
        if rnd is not None:
            S = rnd(S)
    return o, S


def delta_rule_chunked(q, k, v, g, beta, S, chunk, perturb=None, rnd=None):
    """The chunk-parallel (UT transform) form, derivation in the module
    docstring.  Same arguments and result as delta_rule_recurrent; rnd
    rounds S after every chunk (the engine's chunks are its KV blocks)."""
    if perturb == "gdn-no-decay":
        g = np.zeros_like(g)
    n = q.shape[0]
    S = S.copy()
    o = np.empty_like(v)
    for c0 in range(0, n, chunk):
        c1 = min(n, c0 + chunk)
        C = c1 - c0
        Q = q[c0:c1].transpose(1, 0, 2)   # (H, C, dk)
        K = k[c0:c1].transpose(1, 0, 2)
        V = v[c0:c1].transpose(1, 0, 2)   # (H, C, dv)
        B = beta[c0:c1].T                 # (H, C)
        G = np.cumsum(g[c0:c1].T, axis=1)  # (H, C) cumulative log decay
        lower_eq = np.tril(np.ones((C, C), dtype=bool))
        strict = np.tril(np.ones((C, C), dtype=bool), -1)
        diff = G[:, :, None] - G[:, None, :]                  # G_t - G_s
        decay = np.exp(np.where(lower_eq[None], diff, -np.inf))  # M, zero above the diagonal
        KK = np.einsum("htk,hsk->hts", K, K)
        A = np.where(strict[None], B[:, :, None] * decay * KK, 0.0)
        eye = np.eye(C)[None]
        rhs_v = B[:, :, None] * V                             # diag(beta) V
        rhs_k = (B * np.exp(G))[:, :, None] * K               # diag(beta e^G) K
        U0 = np.linalg.solve(eye + A, rhs_v)
        W = np.linalg.solve(eye + A, rhs_k)
        U = U0 - np.einsum("htk,hkv->htv", W, S)
        QK = np.einsum("htk,hsk->hts", Q, K) * decay
        O = np.exp(G)[:, :, None] * np.einsum("htk,hkv->htv", Q, S) + np.einsum("hts,hsv->htv", QK, U)
        o[c0:c1] = O.transpose(1, 0, 2)
        GC = G[:, -1]
        Kd = np.exp(GC[:, None] - G)[:, :, None] * K
        carry = S if perturb == "gdn-chunk" else np.exp(GC)[:, None, None] * S
        S = carry + np.einsum("htk,htv->hkv", Kd, U)
        if rnd is not None:
            S = rnd(S)
    return o, S


class Qwen35State(object):
    """Everything one sequence carries between forward calls."""

    def __init__(self, m):
        self.pos = 0
        self.conv = {}   # GDN layer -> (K-1, conv_dim), oldest row first
        self.ssm = {}    # GDN layer -> (nv, dk, dv)
        self.k = {}      # attention layer (and the MTP block) -> (T, nkv, hd)
        self.v = {}
        for il in range(m.n_layer):
            if m.is_recurrent(il):
                self.conv[il] = np.zeros((m.conv_k - 1, m.conv_dim), dtype=m.dtype)
                self.ssm[il] = np.zeros((m.nv, m.dk, m.dv), dtype=m.dtype)
            else:
                self.k[il] = np.zeros((0, m.n_kv, m.head_dim), dtype=m.dtype)
                self.v[il] = np.zeros((0, m.n_kv, m.head_dim), dtype=m.dtype)
        self.mtp_pos = 0
        if m.has_mtp:
            self.k["mtp"] = np.zeros((0, m.n_kv, m.head_dim), dtype=m.dtype)
            self.v["mtp"] = np.zeros((0, m.n_kv, m.head_dim), dtype=m.dtype)

    def copy(self):
        return copy.deepcopy(self)


class Qwen35Ref(qwen3_ref.Qwen3Ref):
    """Loads a qwen35 file.  Reuses Qwen3Ref's weight loading and matmul
    (exact dequantisation, the int8-activation model); the forward is its own."""

    def __init__(self, path, dtype=np.float64, perturb=None, verbose=False, act_quant=False,
                 gdn_chunk=GDN_CHUNK_DEFAULT, kv_type="f32", state_type="f32"):
        self.dtype = np.dtype(dtype)
        self.kv_type = kv_type
        if state_type not in ("f32", "f16"):
            raise ValueError("state_type %r: f32 or f16" % state_type)
        # f16: the delta rule's state rounded where the engine stores it
        # (--state-type f16; f32 to f16 to nearest even), after every token
        # and every chunk: the caller gives the engine's chunk (its KV block)
        self.state_round = None
        if state_type == "f16":
            self.state_round = lambda S: S.astype(np.float32).astype(np.float16).astype(self.dtype)
        self.act_quant = act_quant
        self.act_block = {}
        self.naive_accum = False
        self.gdn_chunk = gdn_chunk
        self.perturb = perturb if perturb is not None else os.environ.get("REF_PERTURB", "") or None
        if self.perturb and self.perturb not in PERTURBATIONS:
            raise ValueError("unknown REF_PERTURB %r (known: %s)" % (self.perturb, ", ".join(sorted(PERTURBATIONS))))
        self.verbose = verbose
        t0 = time.time()
        g = self.g = gguf_ref.GGUFFile(path)
        arch = _kv(g, "general.architecture")
        if arch != ARCH:
            raise gguf_ref.GGUFError("architecture %r, expected %r" % (arch, ARCH))
        A = ARCH + "."
        self.n_layer_all = int(_kv(g, A + "block_count"))
        self.n_nextn = int(_kv(g, A + "nextn_predict_layers", 0))
        self.n_layer = self.n_layer_all - self.n_nextn
        if self.n_nextn not in (0, 1) or self.n_layer < 1:
            raise gguf_ref.GGUFError("nextn_predict_layers %d of %d blocks: only 0 or 1 is modelled" % (
                self.n_nextn, self.n_layer_all))
        self.hidden = H = int(_kv(g, A + "embedding_length"))
        self.ffn = F = int(_kv(g, A + "feed_forward_length"))
        self.n_head = int(_kv(g, A + "attention.head_count"))
        self.n_kv = int(_kv(g, A + "attention.head_count_kv", self.n_head))
        self.head_dim = hd = int(_kv(g, A + "attention.key_length"))
        if int(_kv(g, A + "attention.value_length", hd)) != hd:
            raise gguf_ref.GGUFError("value_length != key_length")
        self.eps = float(_kv(g, A + "attention.layer_norm_rms_epsilon"))
        self.theta = float(_kv(g, A + "rope.freq_base", 10000.0))
        self.n_rot = int(_kv(g, A + "rope.dimension_count", hd))
        self.sections = [int(s) for s in _kv(g, A + "rope.dimension_sections")]
        if len(self.sections) != 4 or sum(self.sections) == 0 or sum(self.sections) > self.n_rot // 2:
            raise gguf_ref.GGUFError("bad rope.dimension_sections %r for %d rotary dims" % (self.sections, self.n_rot))
        self.conv_k = int(_kv(g, A + "ssm.conv_kernel"))
        self.dk = int(_kv(g, A + "ssm.state_size"))
        self.nk = int(_kv(g, A + "ssm.group_count"))
        self.nv = int(_kv(g, A + "ssm.time_step_rank"))
        d_inner = int(_kv(g, A + "ssm.inner_size"))
        self.interval = int(_kv(g, A + "full_attention_interval", 4))
        if d_inner % self.nv or self.nv % self.nk:
            raise gguf_ref.GGUFError("inner %d / value heads %d / key heads %d do not divide" % (
                d_inner, self.nv, self.nk))
        self.dv = d_inner // self.nv
        self.Dk, self.Dv = self.nk * self.dk, d_inner
        self.conv_dim = 2 * self.Dk + self.Dv
        if self.n_head % self.n_kv or self.n_rot % 2 or self.n_rot > hd:
            raise gguf_ref.GGUFError("bad head shape")
        if self.perturb == "rope-full":
            self.n_rot = hd

        emb = g.tensors["token_embd.weight"]
        self._check(emb, (H, None))
        self.vocab = emb.ne[1]
        self.out_name = "output.weight" if "output.weight" in g.tensors else "token_embd.weight"
        self.tied = self.out_name == "token_embd.weight"
        self.output_norm = self._vec("output_norm.weight", H)
        self.w_out = self._mat(self.out_name, H, self.vocab)

        nh, nkv = self.n_head, self.n_kv
        self.layers = []
        for il in range(self.n_layer):
            p = "blk.%d." % il
            L = {"attn_norm": self._vec(p + "attn_norm.weight", H),
                 "post_norm": self._vec(p + "post_attention_norm.weight", H),
                 "wgate": self._mat(p + "ffn_gate.weight", H, F),
                 "wup": self._mat(p + "ffn_up.weight", H, F),
                 "wdown": self._mat(p + "ffn_down.weight", F, H)}
            if self.is_recurrent(il):
                conv = g.tensors[p + "ssm_conv1d.weight"]
                self._check(conv, (self.conv_k, self.conv_dim))
                L.update({
                    "wqkv": self._mat(p + "attn_qkv.weight", H, self.conv_dim),
                    "wz": self._mat(p + "attn_gate.weight", H, self.Dv),
                    "conv": g.get(p + "ssm_conv1d.weight").astype(self.dtype),  # (conv_dim, K)
                    "dt_bias": self._vec(p + "ssm_dt.bias", self.nv),
                    "a": self._vec(p + "ssm_a", self.nv),
                    "wbeta": self._mat(p + "ssm_beta.weight", H, self.nv),
                    "walpha": self._mat(p + "ssm_alpha.weight", H, self.nv),
                    "ssm_norm": self._vec(p + "ssm_norm.weight", self.dv),
                    "wout": self._mat(p + "ssm_out.weight", self.Dv, H)})
            else:
                L.update(self._attn_weights(p))
            self.layers.append(L)
        self.has_mtp = self.n_nextn == 1
        if self.has_mtp:
            p = "blk.%d." % self.n_layer
            M = {"attn_norm": self._vec(p + "attn_norm.weight", H),
                 "post_norm": self._vec(p + "post_attention_norm.weight", H),
                 "wgate": self._mat(p + "ffn_gate.weight", H, F),
                 "wup": self._mat(p + "ffn_up.weight", H, F),
                 "wdown": self._mat(p + "ffn_down.weight", F, H),
                 "eh_proj": self._mat(p + "nextn.eh_proj.weight", 2 * H, H),
                 "enorm": self._vec(p + "nextn.enorm.weight", H),
                 "hnorm": self._vec(p + "nextn.hnorm.weight", H)}
            M.update(self._attn_weights(p))
            hn = p + "nextn.shared_head_norm.weight"
            M["head_norm"] = self._vec(hn, H) if hn in g.tensors else self.output_norm
            hh = p + "nextn.shared_head_head.weight"
            M["head"] = self._mat(hh, H, self.vocab) if hh in g.tensors else self.w_out
            self.mtp = M
        norms = [self.output_norm] + [w for L in self.layers + ([self.mtp] if self.has_mtp else [])
                                      for key, w in L.items() if key.endswith("norm")]
        self.all_norm_weights_one = all(bool(np.all(w == 1)) for w in norms)  # compare.py's normw blind spot
        if self.verbose:
            print("[ref35] loaded %s: layers=%d (+%d nextn) interval=%d H=%d F=%d heads=%d/%d hd=%d rot=%d "
                  "sections=%s gdn: k=%d dk=%d nk=%d nv=%d dv=%d vocab=%d tied=%s perturb=%s (%.1fs)" % (
                      path, self.n_layer, self.n_nextn, self.interval, H, F, nh, nkv, hd, self.n_rot, self.sections,
                      self.conv_k, self.dk, self.nk, self.nv, self.dv, self.vocab, self.tied, self.perturb,
                      time.time() - t0), file=sys.stderr)

    def _attn_weights(self, p):
        H, hd, nh, nkv = self.hidden, self.head_dim, self.n_head, self.n_kv
        return {"wq": self._mat(p + "attn_q.weight", H, 2 * nh * hd),
                "wk": self._mat(p + "attn_k.weight", H, nkv * hd),
                "wv": self._mat(p + "attn_v.weight", H, nkv * hd),
                "q_norm": self._vec(p + "attn_q_norm.weight", hd),
                "k_norm": self._vec(p + "attn_k_norm.weight", hd),
                "wo": self._mat(p + "attn_output.weight", nh * hd, H)}

    def is_recurrent(self, il):
        return il < self.n_layer and (il + 1) % self.interval != 0

    def rmsnorm(self, x, w):
        ms = np.mean(x * x, axis=-1, keepdims=True)
        return x / np.sqrt(ms + self.eps) * w

    # ---- RoPE ------------------------------------------------------------------------------
    def rope_angles(self, positions):
        """(n, n_rot/2) angles: pair i turns by pos_s * theta^(-2i/n_rot), s
        from the IMROPE sector rule, text streams (t, h, w, e) = (p, p, p, 0)."""
        half = self.n_rot // 2
        sec = self.sections
        total = sum(sec)
        p = np.asarray(positions, dtype=np.float64)
        inv = self.theta ** (-2.0 * np.arange(half, dtype=np.float64) / self.n_rot)
        stream_is_e = np.zeros(half, dtype=bool)
        for i in range(half):
            s = i % total
            in_thw = ((s % 3 == 1 and s < 3 * sec[1]) or (s % 3 == 2 and s < 3 * sec[2])
                      or (s % 3 == 0 and s < 3 * sec[0]))
            stream_is_e[i] = not in_thw
        pos = np.where(stream_is_e[None, :], 0.0, p[:, None])
        return pos * inv[None, :]

    def rope(self, x, positions):
        """x: (n, heads, hd); rotates the first n_rot dims."""
        ang = self.rope_angles(positions)
        cos = np.cos(ang)[:, None, :]
        sin = np.sin(ang)[:, None, :]
        half = self.n_rot // 2
        out = x.copy()
        if self.perturb == "rope-gptj":
            a, b = x[..., 0:self.n_rot:2], x[..., 1:self.n_rot:2]
            out[..., 0:self.n_rot:2] = a * cos - b * sin
            out[..., 1:self.n_rot:2] = a * sin + b * cos
        else:
            a, b = x[..., :half], x[..., half:self.n_rot]
            out[..., :half] = a * cos - b * sin
            out[..., half:self.n_rot] = a * sin + b * cos
        return out

    # ---- mixers ------------------------------------------------------------------------------
    def attention(self, h, L, state, key, positions):
        n = h.shape[0]
        nh, nkv, hd = self.n_head, self.n_kv, self.head_dim
        qg = self.mm(h, L["wq"])
        if self.perturb == "attn-gate-layout":
            q, gate = qg[:, :nh * hd].reshape(n, nh, hd), qg[:, nh * hd:]
        else:
            qg = qg.reshape(n, nh, 2 * hd)
            q, gate = qg[:, :, :hd], qg[:, :, hd:].reshape(n, nh * hd)
        q = self.rmsnorm(q, L["q_norm"])
        k = self.rmsnorm(self.mm(h, L["wk"]).reshape(n, nkv, hd), L["k_norm"])
        v = self.mm(h, L["wv"]).reshape(n, nkv, hd)
        q = self.rope(q, positions)
        k = self.rope(k, positions)
        K = state.k[key] = np.concatenate([state.k[key], self.kv_round(k)], axis=0)
        V = state.v[key] = np.concatenate([state.v[key], self.kv_round(v)], axis=0)
        T = K.shape[0]
        kv_of_head = np.arange(nh) // (nh // nkv)
        s = np.einsum("ihd,thd->hit", q, K[:, kv_of_head]) / np.sqrt(hd)
        mask = np.arange(T)[None, :] <= (T - n + np.arange(n))[:, None]
        s = np.where(mask[None], s, -np.inf)
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        pr = e / e.sum(axis=-1, keepdims=True)
        o = np.einsum("hit,thd->ihd", pr, V[:, kv_of_head]).reshape(n, nh * hd)
        if self.perturb != "attn-gate":
            o = o * sigmoid(gate)
        return self.mm(o, L["wo"])

    def gdn(self, h, L, state, il):
        n = h.shape[0]
        nk, nv, dk, dv, Kc = self.nk, self.nv, self.dk, self.dv, self.conv_k
        qkv = self.mm(h, L["wqkv"])                                       # (n, conv_dim)
        cs = state.conv[il]
        if self.perturb == "gdn-conv-state" and state.pos > 0:
            cs = np.zeros_like(cs)
        X = np.concatenate([cs, qkv], axis=0)                             # (K-1+n, conv_dim)
        w = L["conv"][:, ::-1] if self.perturb == "gdn-conv-flip" else L["conv"]
        y = np.zeros_like(qkv)
        for i in range(Kc):
            y += X[i:i + n] * w[:, i][None, :]
        state.conv[il] = X[-(Kc - 1):].copy() if Kc > 1 else X[:0].copy()
        a = silu(y)
        q = a[:, :self.Dk].reshape(n, nk, dk)
        k = a[:, self.Dk:2 * self.Dk].reshape(n, nk, dk)
        v = a[:, 2 * self.Dk:].reshape(n, nv, dv)
        if self.perturb != "gdn-no-l2":
            q = l2norm(q, self.eps)
            k = l2norm(k, self.eps)
        if self.perturb != "gdn-qscale":
            q = q / np.sqrt(dk)
        beta = sigmoid(self.mm(h, L["wbeta"]))                            # (n, nv)
        if self.perturb == "gdn-beta":
            beta = np.ones_like(beta)
        g = L["a"][None, :] * softplus(self.mm(h, L["walpha"]) + L["dt_bias"][None, :])
        if self.perturb == "gdn-head-map":
            kh = np.arange(nv) // (nv // nk)
        else:
            kh = np.arange(nv) % nk                                       # tiled value heads
        q, k = q[:, kh], k[:, kh]                                         # (n, nv, dk)
        if self.gdn_chunk:
            o, state.ssm[il] = delta_rule_chunked(q, k, v, g, beta, state.ssm[il], self.gdn_chunk, self.perturb,
                                                  self.state_round)
        else:
            o, state.ssm[il] = delta_rule_recurrent(q, k, v, g, beta, state.ssm[il], self.perturb, self.state_round)
        z = self.mm(h, L["wz"]).reshape(n, nv, dv)
        nw = L["ssm_norm"] + 1.0 if self.perturb == "gdn-norm-plus1" else L["ssm_norm"]
        o = self.rmsnorm(o, nw) * silu(z)
        return self.mm(o.reshape(n, self.Dv), L["wout"])

    def ffn_block(self, x, L):
        h = self.rmsnorm(x, L["post_norm"])
        return self.mm(silu(self.mm(h, L["wgate"])) * self.mm(h, L["wup"]), L["wdown"])

    # ---- forward ------------------------------------------------------------------------------
    def new_state(self):
        return Qwen35State(self)

    def forward(self, tokens, state, last_only=False, want_hidden=False):
        """Append tokens at state.pos..; returns logits (n or 1, vocab), and
        with want_hidden also the output-normed hidden rows (the MTP input)."""
        n = len(tokens)
        positions = np.arange(state.pos, state.pos + n)
        x = self.embed(tokens)
        for il, L in enumerate(self.layers):
            h = self.rmsnorm(x, L["attn_norm"])
            if self.is_recurrent(il):
                x = x + self.gdn(h, L, state, il)
            else:
                x = x + self.attention(h, L, state, il, positions)
            x = x + self.ffn_block(x, L)
        state.pos += n
        if last_only:
            x = x[-1:]
        hid = self.rmsnorm(x, self.output_norm)
        logits = self.mm(hid, self.w_out)
        return (logits, hid) if want_hidden else logits

    def mtp_forward(self, next_tokens, hidden, state, positions=None):
        """MTP draft logits.  Row i: hidden (the main model's output-normed
        row at some position p_i) and next_tokens[i] (the token at p_i + 1);
        RoPE position p_i (default: state.mtp_pos onwards).  Appends to the
        MTP block's own KV cache."""
        M = self.mtp
        n = len(next_tokens)
        if positions is None:
            positions = np.arange(state.mtp_pos, state.mtp_pos + n)
        e = self.rmsnorm(self.embed(next_tokens), M["enorm"])
        hn = self.rmsnorm(np.asarray(hidden, dtype=self.dtype), M["hnorm"])
        cat = np.concatenate([hn, e] if self.perturb == "mtp-concat" else [e, hn], axis=1)
        x = self.mm(cat, M["eh_proj"])
        x = x + self.attention(self.rmsnorm(x, M["attn_norm"]), M, state, "mtp", positions)
        x = x + self.ffn_block(x, M)
        state.mtp_pos = int(positions[-1]) + 1
        return self.mm(self.rmsnorm(x, M["head_norm"]), M["head"])

    def run(self, prompt, n_gen, prefill_chunk=0, want_mtp=False):
        """Prompt logits (n_prompt, vocab) and n_gen greedy ids (EOS ignored);
        the prompt goes in pieces of prefill_chunk tokens (0: one piece),
        then one token per forward.  want_mtp: also the MTP draft logits for
        every prompt row but the last (hidden p with token p+1)."""
        st = self.new_state()
        step = prefill_chunk or len(prompt)
        rows, hids = [], []
        for p0 in range(0, len(prompt), step):
            lg, hd = self.forward(prompt[p0:p0 + step], st, want_hidden=True)
            rows.append(lg)
            hids.append(hd)
        logits = np.concatenate(rows)
        ids = []
        last = logits[-1]
        for i in range(n_gen):
            t = int(np.argmax(last))
            ids.append(t)
            if i + 1 < n_gen:
                last = self.forward([t], st, last_only=True)[-1]
        if not want_mtp:
            return logits, ids
        mst = self.new_state()
        hid = np.concatenate(hids)
        mtp = self.mtp_forward(prompt[1:], hid[:-1], mst) if len(prompt) > 1 else np.zeros((0, self.vocab))
        return logits, ids, mtp

    def score_sequence(self, prompt, continuation):
        """Teacher-forced, as Qwen3Ref.score_sequence (compare.py's near-tie check)."""
        st = self.new_state()
        rows = [self.forward(prompt, st, last_only=True)[-1]]
        for t in continuation[:-1]:
            rows.append(self.forward([t], st, last_only=True)[-1])
        return np.array(rows)

    def reset(self):
        pass  # state lives in Qwen35State objects


def load(path, **kw):
    """The reference for a file, chosen by its general.architecture."""
    with gguf_ref.GGUFFile(path) as g:
        arch = g.kv.get("general.architecture")
    if arch == ARCH:
        kw.pop("naive_accum", None)
        bf16_rows = kw.pop("act_bf16_rows", 0)
        bf16x2 = kw.pop("act_bf16x2", False)
        ref = Qwen35Ref(path, **kw)
        ref.act_bf16_rows = bf16_rows
        ref.act_bf16x2 = bf16x2
        return ref
    kw.pop("gdn_chunk", None)
    kw.pop("state_type", None)
    return qwen3_ref.Qwen3Ref(path, **kw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-ids", required=True, help="comma-separated token ids")
    ap.add_argument("--n-gen", type=int, default=32)
    ap.add_argument("--logits-out", help="write prompt logits (n_prompt x n_vocab) here (.npy)")
    ap.add_argument("--logits-f32-out", help="also/instead write them as raw little-endian float32")
    ap.add_argument("--ids-out", help="write generated ids here")
    ap.add_argument("--mtp-out", help="write the MTP draft logits of prompt rows 0..n-2 here (.npy)")
    ap.add_argument("--gdn-chunk", type=int, default=GDN_CHUNK_DEFAULT,
                    help="chunk of the delta rule's chunked form; 0: token-by-token recurrence")
    ap.add_argument("--prefill-chunk", type=int, default=0, help="feed the prompt in pieces of N tokens")
    ap.add_argument("--act-quant", choices=["none", "q8"], default="none")
    ap.add_argument("--kv-type", choices=["f32", "f16", "q8_0"], default="f32",
                    help="f16: round keys and values as the engine's f16 KV cache stores them")
    ap.add_argument("--state-type", choices=["f32", "f16"], default="f32",
                    help="f16: round the delta rule's state after every token and chunk, as the engine's "
                         "--state-type f16 stores it (give --gdn-chunk 16, the engine's chunk)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    prompt = qwen3_ref.parse_ids(a.prompt_ids)
    if not prompt:
        ap.error("empty prompt")
    t0 = time.time()
    m = Qwen35Ref(a.model, verbose=a.verbose, act_quant=a.act_quant == "q8", gdn_chunk=a.gdn_chunk,
                  kv_type=a.kv_type, state_type=a.state_type)
    want_mtp = bool(a.mtp_out)
    if want_mtp and not m.has_mtp:
        ap.error("--mtp-out: the file has no NextN block")
    res = m.run(prompt, a.n_gen, prefill_chunk=a.prefill_chunk, want_mtp=want_mtp)
    logits, ids = res[0], res[1]
    if a.logits_out:
        with open(a.logits_out, "wb") as f:
            np.save(f, logits.astype(np.float64))
    if a.logits_f32_out:
        logits.astype("<f4").tofile(a.logits_f32_out)
    if a.ids_out:
        with open(a.ids_out, "w") as f:
            f.write(" ".join(str(t) for t in ids) + "\n")
    if want_mtp:
        with open(a.mtp_out, "wb") as f:
            np.save(f, res[2].astype(np.float64))
    if a.verbose:
        print("[ref35] %d prompt + %d generated tokens in %.1fs: %s" % (
            len(prompt), len(ids), time.time() - t0, " ".join(map(str, ids))), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
