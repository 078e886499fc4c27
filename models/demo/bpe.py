"""Byte-level BPE with the Qwen2 pre-tokenizer: training, encoding, and the
vocabulary layout the GGUF file carries.

Written for this project; the algorithm is the classic one (Sennrich et al.
2016, byte-level as in GPT-2): pre-tokenize with the Qwen2 regex, spell each
chunk as bytes, then repeatedly merge the most frequent adjacent pair.
"""

import collections
import json
import unicodedata

import regex

# The Qwen2 pre-tokenizer pattern (what tokenizer.ggml.pre = "qwen2" means).
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
                 r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRE = regex.compile(QWEN2_PATTERN)

# Special tokens, last in the vocabulary as in Qwen's: (text, is_control).
# Control tokens are tokenizer.ggml.token_type 3, the rest user-defined (4),
# matching Qwen3's tokenizer.json ("special": true / false).
SPECIALS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<think>", False),
    ("</think>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
]
TYPE_NORMAL, TYPE_CONTROL, TYPE_USER_DEFINED = 1, 3, 4


def byte_chars():
    """GPT-2's byte-to-printable-character map: printable Latin-1 bytes stand
    for themselves, the rest are shifted to U+0100 and up."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(0x100 + extra)
            extra += 1
    return [out[b] for b in range(256)]


BYTE_CHARS = byte_chars()


def pretokenize(text):
    return PRE.findall(unicodedata.normalize("NFC", text))


def train(text, vocab_size, log=print):
    """Returns the merges as (left, right) spelling pairs, rank = index."""
    n_merges = vocab_size - 256 - len(SPECIALS)
    counts = collections.Counter(pretokenize(text))
    words = []  # [symbols (list of str), frequency]
    for w, f in sorted(counts.items()):
        words.append([[BYTE_CHARS[b] for b in w.encode("utf-8")], f])
    pair_count = collections.Counter()
    pair_where = collections.defaultdict(set)
    for i, (sym, f) in enumerate(words):
        for a, b in zip(sym, sym[1:]):
            pair_count[(a, b)] += f
            pair_where[(a, b)].add(i)
    merges = []
    while len(merges) < n_merges and pair_count:
        # most frequent pair; ties broken by the spellings, so the result is deterministic
        best = max(pair_count.items(), key=lambda kv: (kv[1], kv[0]))[0]
        if pair_count[best] < 2:
            break
        merges.append(best)
        joined = best[0] + best[1]
        for i in sorted(pair_where.pop(best, ())):
            sym, f = words[i]
            for a, b in zip(sym, sym[1:]):
                pair_count[(a, b)] -= f
                if pair_count[(a, b)] <= 0:
                    del pair_count[(a, b)]
            out, j = [], 0
            while j < len(sym):
                if j + 1 < len(sym) and sym[j] == best[0] and sym[j + 1] == best[1]:
                    out.append(joined)
                    j += 2
                else:
                    out.append(sym[j])
                    j += 1
            words[i][0] = out
            for a, b in zip(out, out[1:]):
                pair_count[(a, b)] += f
                pair_where[(a, b)].add(i)
        if len(merges) % 500 == 0:
            log("bpe: %d / %d merges" % (len(merges), n_merges))
    if len(merges) < n_merges:
        raise SystemExit("bpe: the corpus gave only %d merges" % len(merges))
    return merges


class Tokenizer:
    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        self.tokens = list(BYTE_CHARS) + [a + b for a, b in self.merges] + [s for s, _ in SPECIALS]
        self.types = [TYPE_NORMAL] * (256 + len(self.merges)) + [
            TYPE_CONTROL if c else TYPE_USER_DEFINED for _, c in SPECIALS]
        self.id_of = {t: i for i, t in enumerate(self.tokens)}
        self.rank = {m: r for r, m in enumerate(self.merges)}
        self.special_re = regex.compile("|".join(regex.escape(s) for s, _ in SPECIALS))
        self.cache = {}
        self.byte_of = {c: b for b, c in enumerate(BYTE_CHARS)}

    def special_id(self, text):
        return self.id_of[text]

    def _bpe(self, chunk):
        ids = self.cache.get(chunk)
        if ids is not None:
            return ids
        sym = [BYTE_CHARS[b] for b in chunk.encode("utf-8")]
        while len(sym) > 1:
            ranks = [self.rank.get((a, b), 1 << 30) for a, b in zip(sym, sym[1:])]
            r = min(ranks)
            if r == 1 << 30:
                break
            pair = self.merges[r]
            out, j = [], 0
            while j < len(sym):
                if j + 1 < len(sym) and sym[j] == pair[0] and sym[j + 1] == pair[1]:
                    out.append(sym[j] + sym[j + 1])
                    j += 2
                else:
                    out.append(sym[j])
                    j += 1
            sym = out
        ids = [self.id_of[s] for s in sym]
        self.cache[chunk] = ids
        return ids

    def encode(self, text):
        """Text to ids; special-token spellings in the text become their ids."""
        ids, pos = [], 0
        for m in self.special_re.finditer(text):
            for c in pretokenize(text[pos:m.start()]):
                ids.extend(self._bpe(c))
            ids.append(self.id_of[m.group(0)])
            pos = m.end()
        for c in pretokenize(text[pos:]):
            ids.extend(self._bpe(c))
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if self.types[i] != TYPE_NORMAL:
                out += t.encode("utf-8")
            else:
                out += bytes(self.byte_of[c] for c in t)
        return out.decode("utf-8", errors="replace")

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"merges": [list(m) for m in self.merges]}, f, ensure_ascii=False)

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            return Tokenizer(json.load(f)["merges"])
