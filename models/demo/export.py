"""Writes a trained checkpoint as a GGUF v3 file the engine loads: the Qwen3
tensor names and qwen3.* keys of src/tools/synth.c, the BPE as
tokenizer.ggml.* metadata, and the Qwen3 chat template of src/text/chat.c."""

import argparse
import codecs
import os
import re
import struct

import numpy as np
import torch

from bpe import SPECIALS, Tokenizer
from model import RMS_EPS, ROPE_THETA

HERE = os.path.dirname(os.path.abspath(__file__))
T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR = 4, 5, 6, 7, 8, 9
GGML_F32, GGML_F16 = 0, 1
ALIGN = 32
PUBLISHED_CONTEXT = 2048  # what the engine may serve; trained on 512 (README)


def chat_template():
    """The template text, read from the C string literal that the engine renders."""
    src = open(os.path.join(HERE, "../../src/text/chat.c"), encoding="utf-8").read()
    body = src.split("const char chat_qwen3_template[] =", 1)[1].split('";\n', 1)[0] + '"'
    lits = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
    return "".join(codecs.decode(s, "unicode_escape") for s in lits)


def _s(x):
    b = x.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _kv(key, t, v):
    out = _s(key) + struct.pack("<I", t)
    if t == T_U32:
        return out + struct.pack("<I", v)
    if t == T_F32:
        return out + struct.pack("<f", v)
    if t == T_BOOL:
        return out + struct.pack("<?", v)
    if t == T_STR:
        return out + _s(v)
    et, items = v  # array
    out += struct.pack("<IQ", et, len(items))
    if et == T_STR:
        return out + b"".join(_s(i) for i in items)
    return out + np.asarray(items, dtype="<i4").tobytes()


def gguf_tensors(state, c):
    """(name, float32 array shaped (ne[1], ne[0])) in synth.c's order."""
    f = lambda k: state[k].detach().float().numpy()
    out = [("token_embd.weight", f("embed.weight"))]
    for i in range(c["layers"]):
        p = "blocks.%d." % i
        for name, key in [("attn_norm", "attn_norm.weight"), ("attn_q", "q.weight"), ("attn_k", "k.weight"),
                          ("attn_v", "v.weight"), ("attn_q_norm", "q_norm.weight"), ("attn_k_norm", "k_norm.weight"),
                          ("attn_output", "o.weight"), ("ffn_norm", "ffn_norm.weight"), ("ffn_gate", "gate.weight"),
                          ("ffn_up", "up.weight"), ("ffn_down", "down.weight")]:
            out.append(("blk.%d.%s.weight" % (i, name), f(p + key)))
    out.append(("output_norm.weight", f("norm.weight")))
    return out


def export(ckpt_path, tok, out_path, name):
    ck = torch.load(ckpt_path, map_location="cpu")
    c, state = ck["config"], ck["state"]
    eot, im_end = tok.special_id("<|endoftext|>"), tok.special_id("<|im_end|>")
    kvs = [
        ("general.architecture", T_STR, "qwen3"),
        ("general.name", T_STR, name),
        ("general.file_type", T_U32, 1),  # llama.cpp's MOSTLY_F16
        ("qwen3.block_count", T_U32, c["layers"]),
        ("qwen3.context_length", T_U32, PUBLISHED_CONTEXT),
        ("qwen3.embedding_length", T_U32, c["hidden"]),
        ("qwen3.feed_forward_length", T_U32, c["ffn"]),
        ("qwen3.attention.head_count", T_U32, c["heads"]),
        ("qwen3.attention.head_count_kv", T_U32, c["kv_heads"]),
        ("qwen3.attention.key_length", T_U32, c["head_dim"]),
        ("qwen3.attention.value_length", T_U32, c["head_dim"]),
        ("qwen3.rope.freq_base", T_F32, ROPE_THETA),
        ("qwen3.attention.layer_norm_rms_epsilon", T_F32, RMS_EPS),
        ("tokenizer.ggml.model", T_STR, "gpt2"),
        ("tokenizer.ggml.pre", T_STR, "qwen2"),
        ("tokenizer.ggml.tokens", T_ARR, (T_STR, tok.tokens)),
        ("tokenizer.ggml.token_type", T_ARR, (T_I32, tok.types)),
        ("tokenizer.ggml.merges", T_ARR, (T_STR, ["%s %s" % m for m in tok.merges])),
        # Qwen3-Base's choice: documents end with <|endoftext|>, which also
        # stands as BOS (never added) and padding; the engine stops at
        # <|im_end|> as well.
        ("tokenizer.ggml.bos_token_id", T_U32, eot),
        ("tokenizer.ggml.eos_token_id", T_U32, eot),
        ("tokenizer.ggml.padding_token_id", T_U32, eot),
        ("tokenizer.ggml.add_bos_token", T_BOOL, False),
        ("tokenizer.chat_template", T_STR, chat_template()),
    ]
    assert im_end >= 0 and len(tok.tokens) == state["embed.weight"].shape[0] and len(SPECIALS) == 9
    tensors = []
    for tname, arr in gguf_tensors(state, c):
        # matrices in F16, norm vectors in F32 (as llama.cpp writes them)
        is_vec = arr.ndim == 1
        data = arr.astype("<f4" if is_vec else "<f2").tobytes()
        tensors.append((tname, list(reversed(arr.shape)), GGML_F32 if is_vec else GGML_F16, data))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(_kv(*kv) for kv in kvs)
    infos, blobs, off = b"", [], 0
    for tname, ne, tt, data in tensors:
        infos += _s(tname) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", tt, off)
        pad = (-len(data)) % ALIGN
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    hdr = head + infos
    hdr += b"\0" * ((-len(hdr)) % ALIGN)
    with open(out_path, "wb") as fo:
        fo.write(hdr)
        for b in blobs:
            fo.write(b)
    print("export: %s (%d bytes)" % (out_path, os.path.getsize(out_path)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--tokenizer", default="data/tokenizer.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", required=True)
    a = ap.parse_args()
    export(a.ckpt, Tokenizer.load(a.tokenizer), a.out, a.name)


if __name__ == "__main__":
    main()
