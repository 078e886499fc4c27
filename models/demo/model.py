"""The Qwen3 architecture in PyTorch, as the engine computes it: RMSNorm,
grouped-query attention with per-head q/k RMSNorm and NeoX RoPE, SwiGLU,
tied input/output embeddings."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {
    # target: about 5.8 M parameters
    "target": dict(hidden=256, layers=6, heads=8, kv_heads=4, head_dim=32, ffn=768),
    # draft for speculative decoding: same vocabulary, a fraction of the cost
    "draft": dict(hidden=128, layers=2, heads=4, kv_heads=2, head_dim=32, ffn=384),
}
VOCAB = 4096
ROPE_THETA = 1e6
RMS_EPS = 1e-6


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_EPS)
        return (xf * self.weight.float()).to(x.dtype)


def rope_tables(n_pos, head_dim, device=None):
    half = head_dim // 2
    inv_freq = ROPE_THETA ** (-torch.arange(half, dtype=torch.float64, device=device) * 2.0 / head_dim)
    ang = torch.arange(n_pos, dtype=torch.float64, device=device)[:, None] * inv_freq[None, :]
    return ang.cos().float(), ang.sin().float()


def apply_rope(x, cos, sin):
    # x: (batch, heads, time, head_dim); NeoX pairing (i, i + half)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, hd = c["hidden"], c["head_dim"]
        self.nh, self.nkv, self.hd = c["heads"], c["kv_heads"], hd
        self.attn_norm = RMSNorm(h)
        self.q = nn.Linear(h, self.nh * hd, bias=False)
        self.k = nn.Linear(h, self.nkv * hd, bias=False)
        self.v = nn.Linear(h, self.nkv * hd, bias=False)
        self.q_norm = RMSNorm(hd)
        self.k_norm = RMSNorm(hd)
        self.o = nn.Linear(self.nh * hd, h, bias=False)
        self.ffn_norm = RMSNorm(h)
        self.gate = nn.Linear(h, c["ffn"], bias=False)
        self.up = nn.Linear(h, c["ffn"], bias=False)
        self.down = nn.Linear(c["ffn"], h, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        xn = self.attn_norm(x)
        q = self.q_norm(self.q(xn).view(b, t, self.nh, self.hd)).transpose(1, 2)
        k = self.k_norm(self.k(xn).view(b, t, self.nkv, self.hd)).transpose(1, 2)
        v = self.v(xn).view(b, t, self.nkv, self.hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # grouped-query attention without copying k and v: the rep query heads
        # that share kv head j (query heads j * rep ... j * rep + rep - 1)
        # become rows of one product
        rep = self.nh // self.nkv
        q = q.reshape(b, self.nkv, rep * t, self.hd) * (1.0 / math.sqrt(self.hd))
        att = (q @ k.transpose(-1, -2)).view(b, self.nkv, rep, t, t) + mask
        att = att.softmax(-1).view(b, self.nkv, rep * t, t)
        y = (att @ v).view(b, self.nh, t, self.hd).transpose(1, 2).reshape(b, t, self.nh * self.hd)
        x = x + self.o(y)
        xn = self.ffn_norm(x)
        return x + self.down(F.silu(self.gate(xn)) * self.up(xn))


class Qwen3(nn.Module):
    def __init__(self, c, vocab=VOCAB):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(vocab, c["hidden"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"])
        nn.init.normal_(self.embed.weight, std=0.02)
        for blk in self.blocks:
            for lin in (blk.q, blk.k, blk.v, blk.gate, blk.up):
                nn.init.normal_(lin.weight, std=0.02)
            for lin in (blk.o, blk.down):  # scaled for depth (GPT-2)
                nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * c["layers"]))

    def forward(self, ids):
        t = ids.shape[1]
        cos, sin = rope_tables(t, self.c["head_dim"], ids.device)
        # additive causal mask: -inf above the diagonal
        mask = torch.full((t, t), float("-inf"), device=ids.device).triu(1)
        x = self.embed(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin, mask)
        return self.norm(x) @ self.embed.weight.to(x.dtype).t()  # tied output
