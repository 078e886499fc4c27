"""Independent GGUF v3 reader for the splash reference implementation.

Written from the GGUF format description only; shares no code with the C
engine.  Uses only the Python standard library and numpy.

    g = GGUFFile("model.gguf")
    g.kv["qwen3.block_count"]          -> python value
    g.tensors["token_embd.weight"]     -> TensorInfo(name, ne, type, offset, nbytes)
    g.get("token_embd.weight")         -> float64 ndarray, numpy shape reversed(ne)
    g.get_rows("token_embd.weight", [5, 7])  -> float64 rows (for 2-D tensors)

All supported storage types (F32, F16, BF16, Q8_0) are dequantised exactly:
every stored value is representable in float32 and therefore in float64.
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
GGML_Q8_0 = 8
GGML_BF16 = 30

TYPE_NAMES = {GGML_F32: "F32", GGML_F16: "F16", GGML_Q8_0: "Q8_0", GGML_BF16: "BF16"}

QK8_0 = 32
# block layout: little-endian float16 scale, then 32 int8 quants (34 bytes, packed)
Q8_0_BLOCK = np.dtype([("d", "<f2"), ("q", "i1", (QK8_0,))])
assert Q8_0_BLOCK.itemsize == 34


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
    if ggml_type == GGML_Q8_0:
        if len(ne) == 0 or int(ne[0]) % QK8_0 != 0:
            raise GGUFError("Q8_0 tensor with ne[0]=%s not a multiple of 32" % (ne[0] if ne else None))
        return (n // QK8_0) * Q8_0_BLOCK.itemsize
    raise GGUFError("unsupported ggml tensor type %d" % ggml_type)


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
