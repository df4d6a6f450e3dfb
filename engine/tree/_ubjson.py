"""A bounded decoder of Universal Binary JSON (UBJSON, https://ubjson.org, big-endian), the
format of XGBoost's ``.ubj`` model files (``Booster.save_model("m.ubj")``,
``save_raw("ubj")``).

Only decoding, only data: objects become ``dict``, arrays ``list`` - or, for the strongly
typed numeric arrays XGBoost writes (``[$d#L<count>`` float32 and the like), one numpy
array read straight from the buffer.  Every length is checked against the bytes that are
left before anything is allocated, and nesting is limited, so a hostile file costs at most
its own size.  Errors are ``ValueError`` naming the byte offset.
"""

from __future__ import annotations

import numpy as np

#: Deepest nesting of arrays/objects accepted (XGBoost models nest about 6 levels).
MAX_DEPTH = 64

_INT_TYPES = {
    ord("i"): np.dtype(">i1"),
    ord("U"): np.dtype(">u1"),
    ord("I"): np.dtype(">i2"),
    ord("l"): np.dtype(">i4"),
    ord("L"): np.dtype(">i8"),
}
_NUMERIC_TYPES = {
    **_INT_TYPES,
    ord("d"): np.dtype(">f4"),
    ord("D"): np.dtype(">f8"),
}


class _Reader:
    def __init__(self, data: bytes, max_depth: int) -> None:
        self.data = memoryview(data)
        self.pos = 0
        self.max_depth = max_depth

    def fail(self, what: str) -> ValueError:
        return ValueError(f"invalid UBJSON at byte {self.pos}: {what}")

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"needs {n} more bytes but only {len(self.data) - self.pos} are left")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def marker(self) -> int:
        while True:
            m = self.take(1)[0]
            if m != ord("N"):  # no-op
                return m

    def number(self, m: int):
        dt = _NUMERIC_TYPES[m]
        v = np.frombuffer(self.take(dt.itemsize), dtype=dt)[0]
        return int(v) if dt.kind in "iu" else float(v)

    def length(self, m: int | None = None) -> int:
        m = self.marker() if m is None else m
        if m not in _INT_TYPES:
            raise self.fail(f"expected an integer length, got marker {chr(m)!r}")
        n = self.number(m)
        if n < 0:
            raise self.fail(f"negative length {n}")
        return n

    def string(self) -> str:
        n = self.length()
        try:
            return bytes(self.take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(f"string is not UTF-8 ({exc.reason})") from None

    def value(self, m: int, depth: int):
        if m in _NUMERIC_TYPES:
            return self.number(m)
        if m == ord("S"):
            return self.string()
        if m == ord("C"):
            return chr(self.take(1)[0])
        if m == ord("T"):
            return True
        if m == ord("F"):
            return False
        if m == ord("Z"):
            return None
        if m == ord("H"):  # high-precision number, as a decimal string
            text = self.string()
            try:
                return float(text)
            except ValueError:
                raise self.fail(f"bad high-precision number {text[:40]!r}") from None
        if m in (ord("["), ord("{")):
            if depth >= self.max_depth:
                raise self.fail(f"nested deeper than {self.max_depth} levels")
            return self.container(m == ord("{"), depth + 1)
        raise self.fail(f"unknown marker {chr(m)!r}")

    def container(self, is_object: bool, depth: int):
        # optional strong type ($) and count (#)
        typ = count = None
        pending: int | None = self.marker()  # read ahead: '$', '#' or the first element
        if pending == ord("$"):
            typ = self.take(1)[0]
            pending = self.marker()
            if pending != ord("#"):
                raise self.fail("a typed container ($) must give its count (#)")
        if pending == ord("#"):
            count = self.length()
            pending = None
        if typ is not None and not is_object and typ in _NUMERIC_TYPES:
            dt = _NUMERIC_TYPES[typ]
            raw = self.take(count * dt.itemsize)
            return np.frombuffer(raw, dtype=dt).astype(dt.newbyteorder("="))
        end = ord("}") if is_object else ord("]")
        out: dict | list = {} if is_object else []
        i = 0
        while True:
            if count is not None:
                if i == count:
                    return out
                # each element needs at least one byte: a count larger than the rest is bad
                if count - i > len(self.data) - self.pos:
                    raise self.fail(f"count {count} is larger than the bytes left")
                m = None
            else:
                m = self.marker() if pending is None else pending
                pending = None
                if m == end:
                    return out
            if is_object:
                key_len = self.length(m)
                try:
                    key = bytes(self.take(key_len)).decode("utf-8")
                except UnicodeDecodeError:
                    raise self.fail("object key is not UTF-8") from None
                vm = typ if typ is not None else self.marker()
                out[key] = self.value(vm, depth)
            else:
                vm = typ if typ is not None else (m if m is not None else self.marker())
                out.append(self.value(vm, depth))
            i += 1


def decode_ubjson(data: bytes, max_depth: int = MAX_DEPTH):
    """Decode one UBJSON value from ``data`` (bytes-like).

    Typed numeric arrays become numpy arrays (native byte order, the file's dtype: float32
    for ``d``, int32 for ``l``...); other arrays lists, objects dicts.  Raises
    ``ValueError`` (truncated or malformed input, unknown markers, lengths beyond the
    data, nesting deeper than ``max_depth``, bytes after the value).
    """
    r = _Reader(bytes(data), max_depth)
    out = r.value(r.marker(), 0)
    if r.pos != len(r.data):
        raise ValueError(f"invalid UBJSON: {len(r.data) - r.pos} bytes after the end of the value")
    return out
