"""Independent GGUF v3 reader for the splash reference implementation.

Written from the GGUF format description only; shares no code with the C
engine.  Uses only the Python standard library and numpy.

    g = GGUFFile("model.gguf")
    g.kv["qwen3.block_count"]          -> python value
    g.tensors["token_embd.weight"]     -> TensorInfo(name, ne, type, offset, nbytes)
    g.get("token_embd.weight")         -> float64 ndarray, numpy shape reversed(ne)
    g.get_rows("token_embd.weight", [5, 7])  -> float64 rows (for 2-D tensors)

Supported storage types: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K.  All
are dequantised exactly into float64.  F32/F16/BF16/Q8_0/Q4_0 values are also
exact float32 numbers; a K-quant value (d*sc*q - dmin*m, or d*sc*(q-32) for
Q6_K) can need up to 25 significant bits, so an engine holding weights in
float32 sees it rounded once (relative error <= 2^-24).

The block layouts, written from the public ggml/GGUF format description:
  Q4_0  32 values, 18 bytes: f16 d; 16 bytes of nibbles.  x = d * (q - 8);
        byte l holds value l (low nibble) and value l + 16 (high nibble).
  Q4_K  256 values, 144 bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and
        mins for 8 sub-blocks of 32, 128 bytes of nibbles.
        x = d * sc[s] * q - dmin * m[s].  Sub-block j < 4: sc = b[j] & 63,
        m = b[j+4] & 63; j >= 4: sc = (b[j+4] & 15) | (b[j-4] >> 6) << 4,
        m = (b[j+4] >> 4) | (b[j] >> 6) << 4.  Chunk c (64 values) owns
        bytes 32c..32c+31: low nibbles are sub-block 2c, high ones 2c+1.
  Q5_K  176 bytes: Q4_K's header, then qh[32], then the 128 nibble bytes;
        sub-block s takes its fifth bit (value 16) from bit s of qh[l].
  Q6_K  256 values, 210 bytes: ql[128], qh[64], int8 scales[16], f16 d.
        x = d * scales[i // 16] * (q - 32), q 6-bit.  In half h (128 values,
        ql[64h:], qh[32h:]) value 32g + l (g = 0..3, l = 0..31) has low bits
        ql[l] & 15, ql[l+32] & 15, ql[l] >> 4, ql[l+32] >> 4 for g = 0..3 and
        high bits (qh[l] >> 2g) & 3.
"""

import mmap
import struct

import numpy as np

GGUF_MAGIC = b"GGUF"

# metadata value types
T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)

_SCALAR_FMT = {
    T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i",
    T_F32: "<f", T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d",
}

# ggml tensor types
GGML_F32 = 0
GGML_F16 = 1
GGML_Q4_0 = 2
GGML_Q8_0 = 8
GGML_Q4_K = 12
GGML_Q5_K = 13
GGML_Q6_K = 14
GGML_BF16 = 30

TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q8_0: "Q8_0", GGML_BF16: "BF16", GGML_Q4_0: "Q4_0",
              GGML_Q4_K: "Q4_K", GGML_Q5_K: "Q5_K", GGML_Q6_K: "Q6_K"}

QK8_0 = 32
# block layout: little-endian float16 scale, then 32 int8 quants (34 bytes, packed)
Q8_0_BLOCK = np.dtype([("d", "<f2"), ("q", "i1", (QK8_0,))])
assert Q8_0_BLOCK.itemsize == 34

QK4_0 = 32
Q4_0_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (QK4_0 // 2,))])
assert Q4_0_BLOCK.itemsize == 18

QK_K = 256
Q4_K_BLOCK = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)), ("qs", "u1", (QK_K // 2,))])
Q5_K_BLOCK = np.dtype([("d", "<f2"), ("dmin", "<f2"), ("scales", "u1", (12,)), ("qh", "u1", (QK_K // 8,)),
                       ("qs", "u1", (QK_K // 2,))])
Q6_K_BLOCK = np.dtype([("ql", "u1", (QK_K // 2,)), ("qh", "u1", (QK_K // 4,)), ("scales", "i1", (QK_K // 16,)),
                       ("d", "<f2")])
assert (Q4_K_BLOCK.itemsize, Q5_K_BLOCK.itemsize, Q6_K_BLOCK.itemsize) == (144, 176, 210)

# quantised types: (values per block, block dtype)
BLOCKS = {GGML_Q8_0: (QK8_0, Q8_0_BLOCK), GGML_Q4_0: (QK4_0, Q4_0_BLOCK), GGML_Q4_K: (QK_K, Q4_K_BLOCK),
          GGML_Q5_K: (QK_K, Q5_K_BLOCK), GGML_Q6_K: (QK_K, Q6_K_BLOCK)}


class GGUFError(Exception):
    pass


def tensor_nbytes(ggml_type, ne):
    n = 1
    for d in ne:
        n *= int(d)
    if ggml_type == GGML_F32:
        return 4 * n
    if ggml_type in (GGML_F16, GGML_BF16):
        return 2 * n
    if ggml_type in BLOCKS:
        qk, block = BLOCKS[ggml_type]
        if len(ne) == 0 or int(ne[0]) % qk != 0:
            raise GGUFError("%s tensor with ne[0]=%s not a multiple of %d" % (
                TYPE_NAMES[ggml_type], ne[0] if ne else None, qk))
        return (n // qk) * block.itemsize
    raise GGUFError("unsupported ggml tensor type %d" % ggml_type)


def _k_scales_mins(b):
    """Q4_K/Q5_K: the 8 six-bit scales and mins of each block, int64 (nb, 8) each."""
    s = b["scales"].astype(np.int64)
    sc = np.concatenate([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], axis=1)
    mn = np.concatenate([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], axis=1)
    return sc, mn


def _k_nibbles(b):
    """Q4_K/Q5_K: the 4-bit quants as (nb, 8 sub-blocks, 32): chunk c's bytes
    give sub-block 2c (low nibbles) and 2c+1 (high nibbles)."""
    qs = b["qs"].astype(np.int64).reshape(-1, 4, 32)
    return np.stack([qs & 15, qs >> 4], axis=2).reshape(-1, 8, 32)


def _dequant_q4_0(b):
    qs = b["qs"].astype(np.int64)
    q = np.concatenate([qs & 15, qs >> 4], axis=1) - 8
    return b["d"].astype(np.float64)[:, None] * q


def _dequant_k_min(b, q):
    sc, mn = _k_scales_mins(b)
    d = b["d"].astype(np.float64)[:, None, None]
    dmin = b["dmin"].astype(np.float64)[:, None, None]
    return d * sc[:, :, None] * q - dmin * mn[:, :, None]


def _dequant_q4_k(b):
    return _dequant_k_min(b, _k_nibbles(b))


def _dequant_q5_k(b):
    qh = b["qh"].astype(np.int64)[:, None, :]                  # (nb, 1, 32)
    high = (qh >> np.arange(8, dtype=np.int64)[None, :, None]) & 1  # sub-block s: bit s
    return _dequant_k_min(b, _k_nibbles(b) | (high << 4))


def _dequant_q6_k(b):
    ql = b["ql"].astype(np.int64).reshape(-1, 2, 64)
    qh = b["qh"].astype(np.int64).reshape(-1, 2, 32)
    lo = [ql[:, :, 0:32] & 15, ql[:, :, 32:64] & 15, ql[:, :, 0:32] >> 4, ql[:, :, 32:64] >> 4]
    q = np.stack([lo[g] | (((qh >> (2 * g)) & 3) << 4) for g in range(4)], axis=2)  # (nb, 2, 4, 32)
    q = q.reshape(-1, 16, 16) - 32
    sc = b["scales"].astype(np.float64)[:, :, None]
    return b["d"].astype(np.float64)[:, None, None] * sc * q


_DEQUANT = {GGML_Q4_0: _dequant_q4_0, GGML_Q4_K: _dequant_q4_k, GGML_Q5_K: _dequant_q5_k, GGML_Q6_K: _dequant_q6_k}


def dequantize(raw, ggml_type, n_elems):
    """raw: 1-D uint8 ndarray holding exactly the tensor's bytes.
    Returns a flat float64 array of n_elems values (exact)."""
    if ggml_type == GGML_F32:
        out = raw.view("<f4").astype(np.float64)
    elif ggml_type == GGML_F16:
        out = raw.view("<f2").astype(np.float64)
    elif ggml_type == GGML_BF16:
        u = raw.view("<u2").astype(np.uint32) << np.uint32(16)
        out = u.view(np.float32).astype(np.float64)
    elif ggml_type == GGML_Q8_0:
        blocks = raw.view(Q8_0_BLOCK)
        d = blocks["d"].astype(np.float64)[:, None]
        q = blocks["q"].astype(np.float64)
        out = (d * q).reshape(-1)
    elif ggml_type in _DEQUANT:
        out = _DEQUANT[ggml_type](raw.view(BLOCKS[ggml_type][1])).reshape(-1)
    else:
        raise GGUFError("unsupported ggml tensor type %d" % ggml_type)
    if out.size != n_elems:
        raise GGUFError("dequantised %d elements, expected %d" % (out.size, n_elems))
    return out


class TensorInfo(object):
    __slots__ = ("name", "ne", "type", "offset", "nbytes")

    def __init__(self, name, ne, ggml_type, offset):
        self.name = name
        self.ne = tuple(int(x) for x in ne)
        self.type = ggml_type
        self.offset = offset
        self.nbytes = tensor_nbytes(ggml_type, self.ne)

    @property
    def n_elems(self):
        n = 1
        for d in self.ne:
            n *= d
        return n

    @property
    def shape(self):
        """numpy shape: ne reversed (ne[0] is the fastest-varying dimension)."""
        return tuple(reversed(self.ne))

    def __repr__(self):
        return "TensorInfo(%s, ne=%s, %s, off=%d)" % (
            self.name, list(self.ne), TYPE_NAMES.get(self.type, self.type), self.offset)


class _Cursor(object):
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0
        self.size = len(buf)

    def take(self, n):
        if n < 0 or self.pos + n > self.size:
            raise GGUFError("truncated file: need %d bytes at offset %d (size %d)" % (n, self.pos, self.size))
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def unpack(self, fmt):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))[0]

    def string(self):
        n = self.unpack("<Q")
        return bytes(self.take(n)).decode("utf-8")

    def value(self, vtype, depth=0):
        if vtype in _SCALAR_FMT:
            return self.unpack(_SCALAR_FMT[vtype])
        if vtype == T_STR:
            return self.string()
        if vtype == T_ARR:
            if depth > 8:
                raise GGUFError("array nesting too deep")
            etype = self.unpack("<I")
            count = self.unpack("<Q")
            if etype in _SCALAR_FMT and etype != T_BOOL:
                # fast path for large numeric arrays (e.g. token scores)
                fmt = _SCALAR_FMT[etype]
                size = struct.calcsize(fmt)
                raw = self.take(size * count)
                return np.frombuffer(bytes(raw), dtype=np.dtype(fmt)).tolist()
            return [self.value(etype, depth + 1) for _ in range(count)]
        raise GGUFError("unknown metadata value type %d" % vtype)


class GGUFFile(object):
    def __init__(self, path):
        self.path = path
        self._f = open(path, "rb")
        try:
            self._mm = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError:
            raise GGUFError("empty file")
        self._parse()

    def close(self):
        self._data = None
        try:
            self._mm.close()
        except BufferError:
            pass  # numpy views still alive; the OS reclaims on exit
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def _parse(self):
        c = _Cursor(memoryview(self._mm))
        magic = bytes(c.take(4))
        if magic != GGUF_MAGIC:
            raise GGUFError("bad magic %r" % magic)
        self.version = c.unpack("<I")
        if self.version != 3:
            raise GGUFError("unsupported GGUF version %d (only 3)" % self.version)
        n_tensors = c.unpack("<Q")
        n_kv = c.unpack("<Q")
        self.kv = {}
        self.kv_types = {}
        for _ in range(n_kv):
            key = c.string()
            vtype = c.unpack("<I")
            if key in self.kv:
                raise GGUFError("duplicate key %s" % key)
            self.kv[key] = c.value(vtype)
            self.kv_types[key] = vtype
        self.tensors = {}
        self.tensor_order = []
        for _ in range(n_tensors):
            name = c.string()
            n_dims = c.unpack("<I")
            if n_dims > 4:
                raise GGUFError("tensor %s has %d dims" % (name, n_dims))
            ne = [c.unpack("<Q") for _ in range(n_dims)]
            ttype = c.unpack("<I")
            off = c.unpack("<Q")
            if name in self.tensors:
                raise GGUFError("duplicate tensor %s" % name)
            ti = TensorInfo(name, ne, ttype, off)
            self.tensors[name] = ti
            self.tensor_order.append(name)
        align = int(self.kv.get("general.alignment", 32))
        if align <= 0 or (align & (align - 1)):
            raise GGUFError("bad alignment %d" % align)
        self.alignment = align
        self.data_start = (c.pos + align - 1) // align * align
        fsize = len(self._mm)
        for ti in self.tensors.values():
            if ti.offset % align:
                raise GGUFError("tensor %s offset %d not aligned" % (ti.name, ti.offset))
            end = self.data_start + ti.offset + ti.nbytes
            if end > fsize:
                raise GGUFError("tensor %s extends past end of file (%d > %d)" % (ti.name, end, fsize))
        self._data = np.frombuffer(self._mm, dtype=np.uint8)

    # ---- tensor access -------------------------------------------------
    def raw(self, name):
        ti = self.tensors[name]
        s = self.data_start + ti.offset
        return self._data[s:s + ti.nbytes]

    def get(self, name):
        """Whole tensor dequantised into float64, numpy shape = reversed(ne)."""
        ti = self.tensors[name]
        return dequantize(self.raw(name), ti.type, ti.n_elems).reshape(ti.shape)

    def row_nbytes(self, name):
        ti = self.tensors[name]
        return tensor_nbytes(ti.type, (ti.ne[0],))

    def get_rows(self, name, rows):
        """Selected rows (index along ne[1]) of a 2-D tensor, float64 (len(rows), ne[0])."""
        ti = self.tensors[name]
        if len(ti.ne) != 2:
            raise GGUFError("get_rows on %d-D tensor %s" % (len(ti.ne), name))
        rb = self.row_nbytes(name)
        base = self.data_start + ti.offset
        out = np.empty((len(rows), ti.ne[0]), dtype=np.float64)
        for i, r in enumerate(rows):
            r = int(r)
            if not 0 <= r < ti.ne[1]:
                raise IndexError("row %d out of range for %s (%d rows)" % (r, name, ti.ne[1]))
            out[i] = dequantize(self._data[base + r * rb: base + (r + 1) * rb], ti.type, ti.ne[0])
        return out

    def get_row_range(self, name, r0, r1):
        """Rows [r0, r1) of a 2-D tensor as float64."""
        ti = self.tensors[name]
        rb = self.row_nbytes(name)
        base = self.data_start + ti.offset
        raw = self._data[base + r0 * rb: base + r1 * rb]
        return dequantize(raw, ti.type, (r1 - r0) * ti.ne[0]).reshape(r1 - r0, ti.ne[0])


def _main():
    import sys
    if len(sys.argv) != 2:
        print("usage: gguf_ref.py FILE.gguf  (dump metadata and tensor table)")
        return 2
    g = GGUFFile(sys.argv[1])
    print("GGUF v%d, %d kv, %d tensors, alignment %d, data at %d" % (
        g.version, len(g.kv), len(g.tensors), g.alignment, g.data_start))
    for k, v in g.kv.items():
        if isinstance(v, list) and len(v) > 8:
            v = "[%d items: %r ...]" % (len(v), v[:4])
        print("  %s = %r" % (k, v))
    for n in g.tensor_order:
        print("  ", g.tensors[n])
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
