"""A strict, bounded reader for the archives ``fg.save`` writes (stored zip of ``.npy`` members).

Nothing here trusts a size read from the file: every offset and length is
checked against the file's real size before anything is read or allocated,
so the memory a read takes is at most the bytes the file really holds. Only
the subset of zip that ``fg.save`` writes is accepted: stored (uncompressed),
unencrypted members laid end to end from the start of the file, then the
central directory, then the end records (zip64 when large); no duplicate
names, no gaps, no overlaps, local headers that agree with the central
directory. ``.npy`` headers are parsed here with a strict pattern (never
``eval``/``literal_eval``, never an allocation from the header's claim).
"""

from __future__ import annotations

import functools
import json
import re
import struct
import zlib
from typing import IO, Any, NamedTuple

import numpy as np

__all__ = ["MAX_NDIM", "MAX_NPY_HEADER", "CheckpointError", "Member", "check_shape", "parse_dtype",
           "read_directory", "read_member_bytes", "read_npy_data", "read_npy_header", "parse_json"]


class CheckpointError(ValueError):
    """A checkpoint is unreadable, unsafe, or does not match the expected tree.

    Raised by ``fg.load``; its public home is ``funcgrad.serialization`` (catch
    ``funcgrad.serialization.CheckpointError``), which is how tracebacks name it.
    """

    __module__ = "funcgrad.serialization"


MAX_NDIM = 64  # NumPy's own limit
MAX_NPY_HEADER = 65536  # NumPy writes ~128 bytes; its reader refuses more than 10000 by default
_MAX_DIM = 2**48

_EOCD = struct.Struct("<4s4H2LH")  # end of central directory, 22 bytes
_LOC64 = struct.Struct("<4sLQL")  # zip64 end-of-central-directory locator, 20 bytes
_EOCD64 = struct.Struct("<4sQ2H2L4Q")  # zip64 end of central directory, 56 bytes
_CDIR = struct.Struct("<4s6H3L5H2L")  # central directory file header, 46 bytes
_LOCAL = struct.Struct("<4s5H3L2H")  # local file header, 30 bytes
_FFFF, _FFFFFFFF = 0xFFFF, 0xFFFFFFFF
_ALLOWED_FLAGS = 0x800  # bit 11: UTF-8 names; anything else (encryption, data descriptors) is refused
_METHODS = {8: "deflate", 9: "deflate64", 12: "bzip2", 14: "lzma", 93: "zstandard", 95: "xz"}


class Member(NamedTuple):
    name: str
    offset: int  # of the member's data in the file
    size: int
    crc: int


def _fail(where: str, what: str) -> CheckpointError:
    return CheckpointError(f"{where}: {what}")


def _pread(f: IO[bytes], offset: int, n: int, where: str) -> bytes:
    f.seek(offset)
    data = f.read(n)
    if len(data) != n:
        raise _fail(where, f"the file is truncated or corrupted (wanted {n} bytes at offset {offset}, "
                           f"got {len(data)})")
    return data


def _zip64_extra(extra: bytes, want: list[str], where: str) -> dict[str, int]:
    """The zip64 extended-information values named in ``want`` (in the order the spec stores them)."""
    found: dict[str, int] = {}
    pos = 0
    seen = False
    while pos < len(extra):
        if pos + 4 > len(extra):
            raise _fail(where, "malformed extra field in a zip header")
        tag, size = struct.unpack_from("<2H", extra, pos)
        body = extra[pos + 4:pos + 4 + size]
        if len(body) != size:
            raise _fail(where, "malformed extra field in a zip header (its length runs past the header)")
        if tag == 1:
            if seen:
                raise _fail(where, "two zip64 extra fields in one zip header")
            seen = True
            if size < 8 * len(want):
                raise _fail(where, "zip64 extra field too short for the sizes it must hold")
            for i, key in enumerate(want):
                found[key] = struct.unpack_from("<Q", body, 8 * i)[0]
        pos += 4 + size
    if want and not seen:
        raise _fail(where, "a zip header says its sizes are in a zip64 extra field, but there is none")
    return found


def _end_records(f: IO[bytes], file_size: int, where: str) -> tuple[int, int, int, int]:
    """(entries, central directory offset, its size, where the end records start)."""
    tail_len = min(file_size, _EOCD.size + 0xFFFF)
    tail = _pread(f, file_size - tail_len, tail_len, where)
    pos = tail.rfind(b"PK\x05\x06")
    while pos >= 0:  # the last record whose comment runs exactly to the end of the file
        if pos + _EOCD.size <= tail_len and pos + _EOCD.size + struct.unpack_from("<H", tail, pos + 20)[0] == tail_len:
            break
        pos = tail.rfind(b"PK\x05\x06", 0, pos)
    if pos < 0:
        raise _fail(where, "is not a readable funcgrad checkpoint (not a complete zip/npz archive: no "
                           "end-of-archive record); it may be truncated or corrupted")
    eocd_at = file_size - tail_len + pos
    _, disk, cd_disk, n_disk, n_total, cd_size, cd_offset, _ = _EOCD.unpack_from(tail, pos)
    start = eocd_at
    if eocd_at >= _LOC64.size and _pread(f, eocd_at - _LOC64.size, 4, where) == b"PK\x06\x07":
        _, disk64, e64_at, n_disks = _LOC64.unpack(_pread(f, eocd_at - _LOC64.size, _LOC64.size, where))
        if disk64 != 0 or n_disks != 1 or e64_at + _EOCD64.size > eocd_at - _LOC64.size:
            raise _fail(where, "malformed zip64 end-of-archive locator")
        rec = _EOCD64.unpack(_pread(f, e64_at, _EOCD64.size, where))
        sig, rec_size, _, _, disk, cd_disk, n_disk, n_total, cd_size, cd_offset = rec
        if sig != b"PK\x06\x06" or e64_at + 12 + rec_size != eocd_at - _LOC64.size:
            raise _fail(where, "malformed zip64 end-of-archive record")
        start = e64_at
    elif _FFFFFFFF in (cd_size, cd_offset) or _FFFF in (n_disk, n_total):
        raise _fail(where, "the end-of-archive record points to a zip64 record that is not there")
    if disk != 0 or cd_disk != 0 or n_disk != n_total:
        raise _fail(where, "multi-disk zip archives are not checkpoints")
    if cd_offset + cd_size != start:
        raise _fail(where, f"the central directory ({cd_size} bytes at offset {cd_offset}) does not end where "
                           f"the end-of-archive records start ({start}); extra or missing bytes")
    if n_total * _CDIR.size > cd_size:
        raise _fail(where, f"the archive claims {n_total} members but its central directory holds only "
                           f"{cd_size} bytes")
    return n_total, cd_offset, cd_size, start


def read_directory(f: IO[bytes], file_size: int, where: str, foreign: bool = False) -> dict[str, Member]:
    """Every member of the archive, checked: names unique, stored, laid end to end, inside the file.

    ``where`` (e.g. ``"fg.load: ckpt.npz"``) starts every error message. ``foreign=True`` also
    accepts what other stored-zip writers (PyTorch's) do: data descriptors after each member (a
    local header with zero CRC and sizes; the central directory's count), gaps between members
    (never overlaps) and UTF-8 names.
    """
    if file_size < _EOCD.size:
        raise _fail(where, f"is not a readable funcgrad checkpoint (not a complete zip/npz archive: only "
                           f"{file_size} bytes); it may be truncated or corrupted")
    n_total, cd_offset, cd_size, _ = _end_records(f, file_size, where)
    cd = _pread(f, cd_offset, cd_size, where)
    members: dict[str, Member] = {}
    spans: list[tuple[int, int, str]] = []
    pos = 0
    for _ in range(n_total):
        if pos + _CDIR.size > len(cd):
            raise _fail(where, "the central directory is truncated")
        (sig, _, _, flags, method, _, _, crc, csize, usize, n_len, x_len, c_len, disk, _, _,
         loc) = _CDIR.unpack_from(cd, pos)
        raw_name = cd[pos + _CDIR.size:pos + _CDIR.size + n_len]
        extra = cd[pos + _CDIR.size + n_len:pos + _CDIR.size + n_len + x_len]
        if sig != b"PK\x01\x02" or pos + _CDIR.size + n_len + x_len + c_len > len(cd):
            raise _fail(where, "malformed central directory entry")
        pos += _CDIR.size + n_len + x_len + c_len
        try:
            name = raw_name.decode("utf-8" if foreign else "ascii")
        except UnicodeDecodeError:
            raise _fail(where, f"member name {raw_name[:80]!r} is not ASCII; not a funcgrad checkpoint") from None
        mwhere = f"{where}: member {name!r}"
        if name in members:
            raise _fail(mwhere, "appears twice in the archive; zip readers disagree on which copy counts, so "
                                "a file with duplicate members is refused")
        want = [k for k, v in (("usize", usize), ("csize", csize), ("offset", loc)) if v == _FFFFFFFF]
        if disk == _FFFF:
            raise _fail(mwhere, "multi-disk zip archives are not checkpoints")
        z64 = _zip64_extra(extra, want, mwhere)
        usize, csize, loc = z64.get("usize", usize), z64.get("csize", csize), z64.get("offset", loc)
        _check_entry(mwhere, flags, method, csize, usize, foreign)
        if loc + _LOCAL.size + n_len + csize > cd_offset:
            raise _fail(mwhere, f"claims {csize} bytes at offset {loc}, past the end of the archive's data "
                                f"({cd_offset} bytes; the file has {file_size}); the file is truncated or crafted")
        # the local header must repeat what the central directory says, so all readers see the same bytes
        (lsig, _, lflags, lmethod, _, _, lcrc, lcsize, lusize, ln_len,
         lx_len) = _LOCAL.unpack(_pread(f, loc, _LOCAL.size, mwhere))
        data_at = loc + _LOCAL.size + ln_len + lx_len
        if lsig != b"PK\x03\x04" or data_at > cd_offset:
            raise _fail(mwhere, "malformed local header")
        lname_extra = _pread(f, loc + _LOCAL.size, ln_len + lx_len, mwhere)
        lwant = [k for k, v in (("usize", lusize), ("csize", lcsize)) if v == _FFFFFFFF]
        l64 = _zip64_extra(lname_extra[ln_len:], lwant, mwhere)
        lusize, lcsize = l64.get("usize", lusize), l64.get("csize", lcsize)
        if foreign and flags & 8 and lcrc == lcsize == lusize == 0:  # the sizes follow the data
            lcrc, lcsize, lusize = crc, csize, usize
        if (lname_extra[:ln_len] != raw_name or lflags != flags or lmethod != method or lcrc != crc
                or lcsize != csize or lusize != usize):
            raise _fail(mwhere, "its local header disagrees with the central directory (name, flags, method, "
                                "CRC or sizes); the file is corrupted or was tampered with")
        if data_at + csize > cd_offset:
            raise _fail(mwhere, f"claims {csize} bytes at offset {data_at}, past the end of the archive's data "
                                f"({cd_offset} bytes; the file has {file_size}); the file is truncated or crafted")
        members[name] = Member(name, data_at, csize, crc)
        spans.append((loc, data_at + csize, name))
    if pos != len(cd):
        raise _fail(where, "the central directory has trailing bytes")
    end = 0
    for start, stop, name in sorted(spans):
        if start < end or (start != end and not foreign):
            raise _fail(f"{where}: member {name!r}", f"starts at offset {start}, but the previous member ends at "
                                                     f"{end}; members overlap or there are hidden bytes")
        end = stop
    if end > cd_offset or (end != cd_offset and not foreign):
        raise _fail(where, f"{cd_offset - end} unaccounted bytes before the central directory")
    return members


def _check_entry(where: str, flags: int, method: int, csize: int, usize: int, foreign: bool = False) -> None:
    if flags & 1:
        raise _fail(where, "is encrypted; funcgrad checkpoints never are")
    if method != 0:
        kind = _METHODS.get(method, f"method {method}")
        raise _fail(where, f"is compressed ({kind}); fg.save never compresses, and inflating an untrusted "
                           f"member could allocate far more memory than the file holds, so it is refused")
    if flags & ~(_ALLOWED_FLAGS | (8 if foreign else 0)):
        raise _fail(where, f"has zip flags {flags:#x} that fg.save never writes")
    if csize != usize:
        raise _fail(where, f"is stored (uncompressed) but its sizes disagree ({csize} != {usize} bytes)")


def read_member_bytes(f: IO[bytes], m: Member, where: str) -> bytes:
    """The whole member (its size was checked against the file), CRC-checked."""
    data = _pread(f, m.offset, m.size, where)
    if zlib.crc32(data) != m.crc:
        raise _fail(where, "CRC mismatch: the file is corrupted")
    return data


_DTYPE_RE = re.compile(r"[<>|][biufc][0-9]{1,2}")


def parse_dtype(s: object) -> np.dtype | None:
    """The NumPy dtype for a descriptor ``fg.save`` can write (``'<f4'``, ``'|b1'``, ...), else None."""
    if not isinstance(s, str) or not _DTYPE_RE.fullmatch(s):
        return None
    return _parse_dtype(s)


@functools.lru_cache(maxsize=64)
def _parse_dtype(s: str) -> np.dtype | None:
    try:
        dt = np.dtype(s)
    except (TypeError, ValueError):
        return None
    if dt.hasobject or dt.kind not in "biufc" or dt.str != s:
        return None
    return dt


_HEADER_RE = re.compile(
    r"\{\s*'descr'\s*:\s*'([^']{1,8})'\s*,\s*'fortran_order'\s*:\s*(True|False)\s*,"
    r"\s*'shape'\s*:\s*\(\s*((?:[0-9]{1,19}\s*,\s*){0,64}(?:[0-9]{1,19})?)\s*\)\s*,?\s*\}\s*"
)


def read_npy_header(f: IO[bytes], m: Member, where: str) -> tuple[int, np.dtype, tuple[int, ...], bool, bytes]:
    """(header length, dtype, shape, fortran order, the header's bytes) of a ``.npy`` member.

    Reads at most ``MAX_NPY_HEADER`` bytes and only within the member; the
    header is matched against the exact form NumPy writes.
    """
    if m.size < 10:
        raise _fail(where, f"is {m.size} bytes, too short for a .npy header")
    head = _pread(f, m.offset, min(m.size, 12), where)
    if head[:6] != b"\x93NUMPY":
        raise _fail(where, "is not a .npy array (bad magic)")
    major, minor = head[6], head[7]
    if (major, minor) == (1, 0):
        prefix, hlen = 10, struct.unpack_from("<H", head, 8)[0]
    elif (major, minor) in ((2, 0), (3, 0)) and len(head) == 12:
        prefix, hlen = 12, struct.unpack_from("<L", head, 8)[0]
    else:
        raise _fail(where, f"has unsupported .npy version {major}.{minor}")
    if hlen > MAX_NPY_HEADER or prefix + hlen > m.size:
        raise _fail(where, f"declares a {hlen}-byte .npy header in a {m.size}-byte member")
    raw = _pread(f, m.offset, prefix + hlen, where)
    text = raw[prefix:].decode("latin1")
    match = _HEADER_RE.fullmatch(text)
    if match is None:
        raise _fail(where, f"has a malformed .npy header {text[:120]!r}")
    descr, fortran, dims = match.groups()
    dtype = parse_dtype(descr)
    if dtype is None:
        raise _fail(where, f"has dtype {descr!r}; only boolean, integer, floating and complex arrays are "
                           f"loaded (never object arrays, whose data would be unpickled)")
    shape = tuple(int(d) for d in dims.replace(",", " ").split())
    return prefix + hlen, dtype, shape, fortran == "True", raw


def read_npy_data(f: IO[bytes], m: Member, header: bytes, dtype: np.dtype, shape: tuple[int, ...],
                  fortran: bool, where: str) -> np.ndarray:
    """The array of a member whose header was read and whose size was checked: one allocation of
    exactly the bytes the member holds, filled straight from the file, then CRC-checked."""
    count = 1
    for d in shape:
        count *= d
    if len(header) + count * dtype.itemsize != m.size:
        raise _fail(where, f"holds {m.size - len(header)} data bytes, but its header says {shape} {dtype} "
                           f"({count * dtype.itemsize} bytes)")
    flat = np.empty(count, dtype)
    view: memoryview = flat.view(np.uint8).data
    f.seek(m.offset + len(header))
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])  # type: ignore[attr-defined]
        if not n:
            raise _fail(where, "the file is truncated")
        got += n
    if zlib.crc32(view, zlib.crc32(header)) != m.crc:
        raise _fail(where, "CRC mismatch: the file is corrupted")
    out: np.ndarray = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    return out


def check_shape(value: object, where: str) -> tuple[int, ...]:
    """A shape from untrusted metadata: a list of at most ``MAX_NDIM`` non-negative ints of sane size."""
    if not isinstance(value, list):
        raise _fail(where, f"must be a list of non-negative integers, got {type(value).__name__}")
    if len(value) > MAX_NDIM:
        raise _fail(where, f"has {len(value)} dimensions; at most {MAX_NDIM} are supported")
    dims = []
    for i, d in enumerate(value):
        if type(d) is not int or d < 0 or d > _MAX_DIM:
            raise _fail(f"{where}[{i}]", f"must be an integer in [0, 2**48], got {d!r:.60}")
        dims.append(d)
    nonzero = 1
    for d in dims:
        nonzero *= max(d, 1)
    if nonzero > _MAX_DIM:
        raise _fail(where, f"{value!r:.80} has more than 2**48 elements (even ignoring zero dimensions)")
    return tuple(dims)


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(data: bytes, where: str) -> Any:
    """Untrusted JSON text: duplicate keys, NaN/Infinity, bad UTF-8, deep nesting and anything
    that would make ``json`` raise something else all give a :class:`CheckpointError`."""
    try:
        return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicate_keys,
                          parse_constant=_refuse_constant)
    except _DuplicateKey as e:
        raise CheckpointError(f"{where}: the key {str(e)!r:.80} appears twice in one object; readers disagree "
                              f"on which copy counts, so it is refused") from None
    except RecursionError:
        raise CheckpointError(f"{where}: nested too deeply") from None
    except MemoryError:
        raise CheckpointError(f"{where}: too large to parse") from None
    except ValueError as e:  # JSONDecodeError, UnicodeDecodeError, too many digits, NaN
        raise CheckpointError(f"{where}: not valid JSON ({e!s:.200})") from None
