"""A fake device backend that behaves like CuPy where it matters, for tests without a GPU.

Arrays of the fake device are :class:`FakeArray`: a distinct type holding a
NumPy array (the "device memory") and a device id. Like ``cupy.ndarray``:

* implicit conversion to NumPy raises ``TypeError`` (``np.asarray(x)``,
  ``__array__``, NumPy ufuncs and NumPy functions called on it);
* mixing with a host ``numpy.ndarray`` in an operation raises ``TypeError``
  (Python and NumPy scalars are fine);
* results are always fake arrays, never NumPy scalars (reductions give 0-d
  arrays);
* explicit transfers work: ``x.get()``, ``fake.asnumpy(x)``, ``fake.asarray(host)``;
  ``float(x)``, ``int(x)``, ``bool(x)``, ``x.item()``, ``x.tolist()`` work on
  size-1 arrays as in CuPy (they synchronize: a device-to-host copy);
* two devices (ids 0 and 1); an operation on arrays of both raises.

The module object :data:`fake` mirrors CuPy's namespace: every NumPy
function and ufunc (ufuncs have no ``.at``/``.reduce``: use
``fake.scatter_add``, as ``cupyx.scatter_add``), ``fake.linalg``,
``fake.random``, ``fake.fft``, ``fake.scipy_special`` (as
``cupyx.scipy.special``), ``fake.get_array_module``, ``fake.cuda.Device``.

Every transfer is counted in :data:`STATS` (``d2h``: device to host, ``h2d``:
host to device); inside :func:`no_host_sync` a device-to-host transfer raises
:class:`HostSyncError` (an ``AssertionError``), with a traceback that points at
the culprit. :func:`install` registers the backend with funcgrad (platform
``'fake'``); :func:`as_cuda` also serves ``'cuda'`` device strings with it.
Inside :func:`elementwise_kernels` the namespace also has CuPy's
``ElementwiseKernel`` (:class:`FakeElementwiseKernel`: it checks a kernel's
parameters and body and evaluates the small C subset fg.jit's CUDA backend emits).
"""

from __future__ import annotations

import contextlib
import threading
import types
from typing import Any, Callable, Iterator

import numpy as np

__all__ = [
    "FakeArray", "fake", "STATS", "HostSyncError", "no_host_sync", "count_transfers", "install",
    "as_cuda", "FakeBackend", "to_fake",
]


class HostSyncError(AssertionError):
    """A device-to-host transfer happened where none is allowed."""


STATS = {"d2h": 0, "h2d": 0}
_state = threading.local()


def _forbidden() -> int:
    return getattr(_state, "forbid", 0)


def _current_device() -> int:
    return getattr(_state, "device", 0)


def _d2h(what: str) -> None:
    if _forbidden():
        raise HostSyncError(f"device-to-host transfer ({what}) inside no_host_sync()")
    STATS["d2h"] += 1


def _h2d() -> None:
    if getattr(_state, "forbid_up", 0):
        raise HostSyncError("host-to-device upload inside no_uploads()")
    STATS["h2d"] += 1


@contextlib.contextmanager
def no_uploads() -> Iterator[None]:
    """Any host-to-device upload inside the block raises HostSyncError (to find where one happens)."""
    _state.forbid_up = getattr(_state, "forbid_up", 0) + 1
    try:
        yield
    finally:
        _state.forbid_up -= 1


@contextlib.contextmanager
def no_host_sync() -> Iterator[None]:
    """Any device-to-host transfer inside the block raises HostSyncError."""
    _state.forbid = _forbidden() + 1
    try:
        yield
    finally:
        _state.forbid -= 1


class _Counter:
    def __init__(self) -> None:
        self.start = dict(STATS)

    @property
    def d2h(self) -> int:
        return STATS["d2h"] - self.start["d2h"]

    @property
    def h2d(self) -> int:
        return STATS["h2d"] - self.start["h2d"]


@contextlib.contextmanager
def count_transfers() -> Iterator[_Counter]:
    """``with count_transfers() as c: ...``; then ``c.d2h`` and ``c.h2d``."""
    yield _Counter()


# --------------------------------------------------------------------------
# the array type

_BLOCKED_ATTRS = {
    "__array_interface__", "__array_struct__", "__array_wrap__", "__array_prepare__", "ctypes",
    "__dlpack__", "__dlpack_device__", "__buffer__", "data", "tobytes", "tofile", "dump", "dumps",
}


class FakeArray:
    """An array on the fake device (see the module docstring)."""

    __slots__ = ("_a", "_dev")
    __array_priority__ = 100
    __array_ufunc__ = None  # NumPy ufuncs refuse us; binary operators defer to our reflected ones
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, a: np.ndarray, dev: int = 0):
        assert type(a) is np.ndarray, type(a)
        self._a = a
        self._dev = dev

    # --- refusing implicit conversion (as cupy.ndarray does)
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(
            "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
            "NumPy array explicitly."
        )

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        raise TypeError(
            f"numpy.{getattr(func, '__name__', func)} was called on a fake device array: call the "
            f"array's own namespace instead (funcgrad.backend.namespace_of)"
        )

    # --- attributes
    @property
    def shape(self) -> tuple:
        return self._a.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._a.shape = value

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    @property
    def strides(self) -> tuple:
        return self._a.strides

    @property
    def flags(self) -> Any:
        return self._a.flags

    @property
    def device(self) -> "_FakeDevice":
        return _FakeDevice(self._dev)

    @property
    def T(self) -> "FakeArray":
        return FakeArray(self._a.T, self._dev)

    @property
    def mT(self) -> "FakeArray":
        return FakeArray(np.swapaxes(self._a, -1, -2), self._dev)

    @property
    def real(self) -> "FakeArray":
        return _wrap(self._a.real, self._dev)

    @property
    def imag(self) -> "FakeArray":
        return _wrap(self._a.imag, self._dev)

    @property
    def base(self) -> Any:
        b = self._a.base
        return FakeArray(b, self._dev) if type(b) is np.ndarray else None

    # --- explicit transfers (they synchronize)
    def get(self, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
        _d2h("get()")
        return np.array(self._a, order=order, copy=True)

    def item(self, *args: Any) -> Any:
        if self._a.size != 1 and not args:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        _d2h("item()")
        return self._a.item(*args)

    def tolist(self) -> Any:
        _d2h("tolist()")
        return self._a.tolist()

    def __float__(self) -> float:
        _d2h("float()")
        return float(self._a)

    def __int__(self) -> int:
        _d2h("int()")
        return int(self._a)

    def __complex__(self) -> complex:
        _d2h("complex()")
        return complex(self._a)

    def __bool__(self) -> bool:
        _d2h("bool()")
        return bool(self._a)

    def __repr__(self) -> str:
        _d2h("repr()")
        return f"fake{self._a!r}" if self._dev == 0 else f"fake:{self._dev}{self._a!r}"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        _d2h("format()")
        return format(self._a, spec)

    # --- containers
    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Iterator["FakeArray"]:
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._a.shape[0]))

    def __getitem__(self, key: Any) -> "FakeArray":
        return _wrap(self._a[_index(key, self._dev)], self._dev)

    def __setitem__(self, key: Any, value: Any) -> None:
        if type(value) is np.ndarray and value.ndim:  # as CuPy's fill
            raise TypeError("non-scalar numpy.ndarray cannot be used for fill (a host array written "
                            "into a device array; upload it first)")
        self._a[_index(key, self._dev)] = _value(value, self._dev)

    def __copy__(self) -> "FakeArray":
        return FakeArray(self._a.copy(), self._dev)

    def __deepcopy__(self, memo: Any) -> "FakeArray":
        return FakeArray(self._a.copy(), self._dev)

    def __reduce__(self) -> Any:  # pickling goes through the host, explicitly (as CuPy's)
        return (_from_host_for_pickle, (self.get(), self._dev))

    def scatter_add(self, slices: Any, value: Any) -> None:
        _scatter_add(self, slices, value)

    # --- every other ndarray method: computed on the device data, results wrapped
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__array") or name in _BLOCKED_ATTRS or name.startswith("_"):
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if not callable(attr):
            return _wrap(attr, self._dev)
        dev = self._dev

        def method(*args: Any, **kwargs: Any) -> Any:
            args, kwargs, out = _unwrap_call(args, kwargs, dev)
            res = attr(*args, **kwargs)
            return out if out is not None else _wrap(res, dev)

        method.__name__ = name
        return method


def _from_host_for_pickle(a: np.ndarray, dev: int) -> FakeArray:
    _h2d()
    return FakeArray(np.array(a), dev)


class _FakeDevice:
    """``cupy.cuda.Device``: ``.id``; as a context manager, the current device for creation."""

    def __init__(self, id: int = 0):  # noqa: A002
        self.id = int(id)

    def __enter__(self) -> "_FakeDevice":
        self._prev = _current_device()
        _state.device = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.device = self._prev

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _FakeDevice) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<fake Device {self.id}>"


# --------------------------------------------------------------------------
# unwrapping arguments and wrapping results

_SCALARS = (bool, int, float, complex, np.generic)


def _unsupported(x: Any) -> TypeError:
    return TypeError(f"Unsupported type {type(x)}")


def _check_dev(dev: list, x: FakeArray) -> None:
    if dev[0] is None:
        dev[0] = x._dev
    elif dev[0] != x._dev:
        raise ValueError(
            f"Array device must be same as the current device: array device = {x._dev} while current = {dev[0]}"
        )


def _unwrap(x: Any, dev: list) -> Any:
    t = type(x)
    if t is FakeArray:
        _check_dev(dev, x)
        return x._a
    if t is np.ndarray:
        raise _unsupported(x)
    if t is list or t is tuple:
        return t(_unwrap(v, dev) for v in x)
    return x


def _unwrap_call(args: tuple, kwargs: dict, dev0: int | None = None) -> tuple[tuple, dict, Any]:
    dev = [dev0]
    out = kwargs.get("out")
    if out is not None:
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        if type(out) is not FakeArray:
            raise TypeError(f"out must be a fake device array, got {type(out).__name__}")
    args = tuple(_unwrap(a, dev) for a in args)
    if kwargs:
        kwargs = {k: _unwrap(v, dev) for k, v in kwargs.items()}
    return args, kwargs, out


def _wrap(r: Any, dev: int) -> Any:
    t = type(r)
    if t is np.ndarray:
        return FakeArray(r, dev)
    if isinstance(r, np.generic):
        return FakeArray(np.asarray(r), dev)
    if isinstance(r, tuple):  # plain tuples and result namedtuples (CuPy returns plain tuples)
        return tuple(_wrap(v, dev) for v in r)
    if t is list:
        return [_wrap(v, dev) for v in r]
    return r


def _index(key: Any, dev: int) -> Any:
    """An index for the device data: fake arrays unwrap; host index arrays are uploaded (as CuPy does).

    A boolean device mask selects a data-dependent number of elements: CuPy counts
    them on the device and reads the count back (a synchronization).
    """
    t = type(key)
    if t is FakeArray:
        _check_dev([dev], key)
        if key._a.dtype == np.bool_ and key._a.ndim:
            _d2h("boolean mask index: the result size depends on the values")
        return key._a
    if t is np.ndarray:
        _h2d()
        return key
    if t is tuple:
        return tuple(_index(k, dev) for k in key)
    if t is list:
        if any(type(k) is FakeArray for k in key):
            return np.asarray([_index(k, dev) for k in key])
        _h2d()
        return key
    return key


def _value(v: Any, dev: int) -> Any:
    """A value written into device memory: fake arrays and scalars; host arrays are uploaded."""
    t = type(v)
    if t is FakeArray:
        _check_dev([dev], v)
        return v._a
    if t is np.ndarray or t is list or t is tuple:
        _h2d()
        return np.asarray(v)
    return v


def _check_operand(o: Any) -> bool:
    """True for operands we handle; NotImplemented-worthy ones give False; host arrays raise."""
    t = type(o)
    if t is FakeArray or isinstance(o, _SCALARS):
        return True
    if t is np.ndarray or isinstance(o, np.ndarray):
        raise _unsupported(o)
    return False


def _binary(op: Callable, reflected: bool = False) -> Callable:
    def method(self: FakeArray, other: Any) -> Any:
        if not _check_operand(other):
            return NotImplemented
        dev = [self._dev]
        o = _unwrap(other, dev)
        return _wrap(op(o, self._a) if reflected else op(self._a, o), self._dev)

    return method


def _inplace(op: Callable) -> Callable:
    def method(self: FakeArray, other: Any) -> Any:
        if not _check_operand(other):
            return NotImplemented
        op(self._a, _unwrap(other, [self._dev]), out=self._a)
        return self

    return method


def _unary(op: Callable) -> Callable:
    def method(self: FakeArray) -> Any:
        return _wrap(op(self._a), self._dev)

    return method


_BINOPS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
    "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "matmul": np.matmul,
    "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift,
    "rshift": np.right_shift,
}
for _name, _op in _BINOPS.items():
    setattr(FakeArray, f"__{_name}__", _binary(_op))
    setattr(FakeArray, f"__r{_name}__", _binary(_op, reflected=True))
    setattr(FakeArray, f"__i{_name}__", _inplace(_op))
for _name, _op in {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
                   "eq": np.equal, "ne": np.not_equal}.items():
    setattr(FakeArray, f"__{_name}__", _binary(_op))
for _name, _op in {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}.items():
    setattr(FakeArray, f"__{_name}__", _unary(_op))
FakeArray.__divmod__ = lambda self, other: (self // other, self % other)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------
# the namespace module

_BOOL_AS_ARRAY = {"allclose", "array_equal", "array_equiv"}


# Functions whose output shape depends on the values: CuPy reads a count back from the
# device (a synchronization) before it can allocate the result.
_SYNCING = {"nonzero", "argwhere", "flatnonzero", "unique", "extract", "compress", "bincount", "unique_values",
            "unique_counts", "unique_inverse", "unique_all", "histogram", "trim_zeros"}


def _function_dev(fn: Callable, name: str) -> Callable:
    """A NumPy function on device data; results land on the arguments' device."""
    syncing = name in _SYNCING

    def call(*args: Any, **kwargs: Any) -> Any:
        if syncing and _has_fake(list(args) + list(kwargs.values())):
            _d2h(f"{name}: output size depends on the values")
        dev = [None]
        out = kwargs.get("out")
        if out is not None:
            if isinstance(out, tuple) and len(out) == 1:
                out = out[0]
            if type(out) is not FakeArray:
                raise TypeError(f"out must be a fake device array, got {type(out).__name__}")
            _check_dev(dev, out)
        a = tuple(_unwrap(x, dev) for x in args)
        k = {key: _unwrap(v, dev) for key, v in kwargs.items()} if kwargs else kwargs
        res = fn(*a, **k)
        if out is not None:
            return out
        if name in _BOOL_AS_ARRAY and isinstance(res, bool):
            res = np.asarray(res)
        return _wrap(res, _current_device() if dev[0] is None else dev[0])

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"fake device ``{name}`` (NumPy's, on device data)"
    return call


class _FakeUfunc:
    """A ufunc of the fake device: callable; no ``at``/``reduce``/``outer`` (use scatter_add)."""

    def __init__(self, uf: np.ufunc):
        self._call = _function_dev(uf, uf.__name__)
        self.__name__ = uf.__name__
        self.nin = uf.nin
        self.nout = uf.nout
        self.nargs = uf.nargs

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<fake ufunc '{self.__name__}'>"


def _to_device_data(obj: Any, dtype: Any, dev: list) -> np.ndarray:
    """Host data for creating an array: fake arrays (and lists holding them) stay on the device."""
    t = type(obj)
    if t is FakeArray:
        _check_dev(dev, obj)
        return obj._a
    if t in (list, tuple) and _has_fake(obj):
        return np.asarray(_unwrap_nested(obj, dev), dtype=dtype)
    _h2d()
    return np.asarray(obj, dtype=dtype)


def _has_fake(obj: Any) -> bool:
    if type(obj) is FakeArray:
        return True
    if type(obj) in (list, tuple):
        return any(_has_fake(o) for o in obj)
    return False


def _unwrap_nested(obj: Any, dev: list) -> Any:
    if type(obj) is FakeArray:
        _check_dev(dev, obj)
        return obj._a
    if type(obj) in (list, tuple):
        return [_unwrap_nested(o, dev) for o in obj]
    if type(obj) is np.ndarray:
        raise _unsupported(obj)
    return obj


def array(obj: Any, dtype: Any = None, copy: bool = True, order: str = "K", subok: bool = False,
          ndmin: int = 0, **_: Any) -> FakeArray:
    dev = [None]
    data = _to_device_data(obj, dtype, dev)
    out = np.array(data, dtype=dtype, copy=True if copy is None else copy or data is getattr(obj, "_a", None),
                   order=order, ndmin=ndmin)
    if copy is False and type(obj) is FakeArray and out is obj._a:
        return obj
    return FakeArray(np.asarray(out), _current_device() if dev[0] is None else dev[0])


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: Any = None, **_: Any) -> FakeArray:
    if type(a) is FakeArray:
        if dtype is None or np.dtype(dtype) == a.dtype:
            return a if not copy else FakeArray(a._a.copy(), a._dev)
        return FakeArray(a._a.astype(dtype), a._dev)
    dev = [None]
    data = _to_device_data(a, dtype, dev)
    return FakeArray(np.array(data, dtype=dtype, order=order or "K", copy=True),
                     _current_device() if dev[0] is None else dev[0])


def asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
    if type(a) is FakeArray:
        return a.get(order=order)
    return np.asarray(a, order=order)


def get_array_module(*args: Any) -> Any:
    return fake if any(type(a) is FakeArray for a in args) else np


def _scatter_add(a: FakeArray, slices: Any, value: Any) -> None:
    """``cupyx.scatter_add``: ``a[slices] += value`` with repeated indices adding up."""
    _scatter(a, slices, value, np.add)


def _scatter_max(a: FakeArray, slices: Any, value: Any) -> None:
    """``cupyx.scatter_max``."""
    _scatter(a, slices, value, np.maximum)


def _scatter_min(a: FakeArray, slices: Any, value: Any) -> None:
    """``cupyx.scatter_min``."""
    _scatter(a, slices, value, np.minimum)


def _scatter(a: FakeArray, slices: Any, value: Any, ufunc: np.ufunc) -> None:
    if type(a) is not FakeArray:
        raise TypeError(f"scatter: expected a fake device array, got {type(a).__name__}")
    idx = _index(slices, a._dev)
    v = _value(value, a._dev)
    target = a._a[idx].shape
    v = np.asarray(v, dtype=a.dtype) if not isinstance(v, np.ndarray) else v
    if v.shape != target:  # NumPy 2.4's add.at misreads broadcast values: give it full ones
        if v.ndim > len(target):
            v = v.reshape(v.shape[v.ndim - len(target):])
        v = np.ascontiguousarray(np.broadcast_to(v, target))
    ufunc.at(a._a, idx, v)


_CREATION_FROM_SHAPE = {
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
    "tri", "indices", "diag_indices", "tril_indices", "triu_indices", "mask_indices",
}


def _creation(fn: Callable, name: str) -> Callable:
    def call(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("device", None)
        dev = [None]
        args = tuple(_unwrap(a, dev) for a in args)
        kwargs = {k: _unwrap(v, dev) for k, v in kwargs.items()}
        return _wrap(fn(*args, **kwargs), _current_device() if dev[0] is None else dev[0])

    call.__name__ = call.__qualname__ = name
    return call


def _module(name: str, src: Any, skip: set[str] = frozenset()) -> types.ModuleType:  # type: ignore[assignment]
    mod = types.ModuleType(name)
    for attr in dir(src):
        if attr.startswith("_") or attr in skip:
            continue
        obj = getattr(src, attr)
        if isinstance(obj, np.ufunc):
            setattr(mod, attr, _FakeUfunc(obj))
        elif isinstance(obj, type) or isinstance(obj, types.ModuleType):
            if isinstance(obj, type):
                setattr(mod, attr, obj)  # dtypes, finfo, errstate ...: NumPy's own (as in CuPy)
        elif callable(obj):
            if attr in _CREATION_FROM_SHAPE:
                setattr(mod, attr, _creation(obj, attr))
            else:
                setattr(mod, attr, _function_dev(obj, attr))
        else:
            setattr(mod, attr, obj)  # constants: pi, e, inf, nan, newaxis
    return mod


fake = _module("fakecupy", np, skip={"asarray", "array", "asanyarray", "ascontiguousarray", "ndarray"})
fake.__doc__ = "A CuPy-like namespace over FakeArray (see tests/fake_backend.py)."
fake.ndarray = FakeArray
fake.array = array
fake.asarray = asarray
fake.asanyarray = asarray
fake.ascontiguousarray = lambda a, dtype=None, **kw: asarray(a, dtype=dtype)
fake.asnumpy = asnumpy
fake.get_array_module = get_array_module
fake.scatter_add = _scatter_add
fake.scatter_max = _scatter_max
fake.scatter_min = _scatter_min
fake.linalg = _module("fakecupy.linalg", np.linalg)
fake.fft = _module("fakecupy.fft", np.fft)


class _FakeGenerator:
    def __init__(self, gen: np.random.Generator):
        self._g = gen

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._g, name)
        if not callable(fn):
            return fn
        return _creation(fn, name)


fake.random = _module("fakecupy.random", np.random, skip={"default_rng", "Generator", "RandomState"})
fake.random.default_rng = lambda seed=None: _FakeGenerator(np.random.default_rng(seed))
fake.random.RandomState = lambda seed=None: _FakeGenerator(np.random.RandomState(seed))  # type: ignore[arg-type]
for _name in dir(np.random):
    if not _name.startswith("_") and callable(getattr(np.random, _name)) and _name not in (
            "default_rng", "Generator", "RandomState", "BitGenerator", "SeedSequence", "PCG64", "MT19937",
            "Philox", "SFC64", "PCG64DXSM"):
        setattr(fake.random, _name, _creation(getattr(np.random, _name), _name))

try:
    import scipy.special as _sp

    fake.scipy_special = _module("fakecupy.scipy_special", _sp)
except ImportError:  # pragma: no cover
    pass

try:  # as cupyx.scipy.linalg / signal (the fake has every SciPy function CuPy might lack)
    import scipy.linalg as _sl
    import scipy.signal as _ss

    fake.scipy_linalg = _module("fakecupy.scipy_linalg", _sl)
    fake.scipy_signal = _module("fakecupy.scipy_signal", _ss)
except ImportError:  # pragma: no cover
    pass

# --------------------------------------------------------------------------
# sparse: a cupyx.scipy.sparse-like module (csr/csc/coo matrices over FakeArrays; linalg
# with splu, spsolve and the iterative solvers). Kernels run SciPy on the arrays' device
# buffers; results come back as FakeArrays. A host (NumPy) operand is an error, as in CuPy.


class _FakeSparseMatrix:
    """A cupyx-like sparse matrix: ``csr_matrix((data, indices, indptr), shape=...)``."""

    format = "csr"

    def __init__(self, arg1: Any, shape: Any = None, dtype: Any = None):
        import scipy.sparse as ssp

        if isinstance(arg1, _FakeSparseMatrix):
            self._m, self._dev = arg1._m.asformat(self.format), arg1._dev
            return
        dev = [None]
        parts = tuple(np.ascontiguousarray(_unwrap(a, dev)) for a in (arg1 if isinstance(arg1, tuple) else (arg1,)))
        if isinstance(arg1, tuple) and len(arg1) == 2 and isinstance(arg1[1], tuple):
            parts = (_unwrap(arg1[0], dev), tuple(_unwrap(a, dev) for a in arg1[1]))
        cls = getattr(ssp, f"{self.format}_matrix")
        self._m = cls(parts if isinstance(arg1, tuple) else parts[0], shape=shape, dtype=dtype)
        self._dev = _current_device() if dev[0] is None else dev[0]

    @classmethod
    def _of(cls, m: Any, dev: int) -> "_FakeSparseMatrix":
        out = _FAKE_SPARSE[m.format].__new__(_FAKE_SPARSE[m.format])
        out._m, out._dev = m, dev
        return out

    shape = property(lambda self: self._m.shape)
    dtype = property(lambda self: self._m.dtype)
    nnz = property(lambda self: self._m.nnz)
    data = property(lambda self: FakeArray(self._m.data, self._dev))
    T = property(lambda self: self._of(self._m.T, self._dev))

    def conj(self) -> "_FakeSparseMatrix":
        return self._of(self._m.conj(), self._dev)

    def tocoo(self) -> "_FakeSparseMatrix":
        return self._of(self._m.tocoo(), self._dev)

    def tocsr(self) -> "_FakeSparseMatrix":
        return self._of(self._m.tocsr(), self._dev)

    def tocsc(self) -> "_FakeSparseMatrix":
        return self._of(self._m.tocsc(), self._dev)

    def __getattr__(self, name: str) -> Any:
        if name in ("row", "col", "indices", "indptr"):
            return FakeArray(getattr(self._m, name), self._dev)
        raise AttributeError(name)

    def __matmul__(self, other: Any) -> Any:
        if isinstance(other, _FakeSparseMatrix):
            return self._of(self._m @ other._m, self._dev)
        return FakeArray(np.asarray(self._m @ _unwrap(other, [self._dev])), self._dev)

    dot = __matmul__


class _FakeCsr(_FakeSparseMatrix):
    format = "csr"


class _FakeCsc(_FakeSparseMatrix):
    format = "csc"


class _FakeCoo(_FakeSparseMatrix):
    format = "coo"


_FAKE_SPARSE = {"csr": _FakeCsr, "csc": _FakeCsc, "coo": _FakeCoo}


class _FakeSuperLU:
    def __init__(self, lu: Any, dev: int):
        self._lu, self._dev = lu, dev

    def solve(self, rhs: Any, trans: str = "N") -> FakeArray:
        return FakeArray(self._lu.solve(np.ascontiguousarray(_unwrap(rhs, [self._dev])), trans=trans), self._dev)


def _sparse_operand(a: Any) -> Any:
    if isinstance(a, _FakeSparseMatrix):
        return a._m, a._dev
    if isinstance(a, _FakeLinearOperator):
        return a._host_operator(), a._dev
    raise TypeError(f"expected a fake-device sparse matrix or LinearOperator, got {type(a).__name__}")


class _FakeLinearOperator:
    """cupyx's LinearOperator: matvec/rmatvec take and return device arrays."""

    def __init__(self, shape: Any, matvec: Any, rmatvec: Any = None, dtype: Any = None):
        self.shape, self._mv, self._rmv, self.dtype, self._dev = tuple(shape), matvec, rmatvec, dtype, 0

    def _host_operator(self) -> Any:
        import scipy.sparse.linalg as sla

        def lift(fn: Any) -> Any:
            return None if fn is None else (lambda v: _unwrap(fn(FakeArray(np.asarray(v), self._dev)), [self._dev]))
        return sla.LinearOperator(self.shape, matvec=lift(self._mv), rmatvec=lift(self._rmv), dtype=self.dtype)


def _fake_iterative(name: str) -> Callable:
    def solver(A: Any, b: Any, x0: Any = None, **kwargs: Any) -> tuple[FakeArray, int]:  # noqa: N803
        import scipy.sparse.linalg as sla

        m, dev = _sparse_operand(A)
        x0h = None if x0 is None else _unwrap(x0, [dev])
        if kwargs.get("M") is not None:
            kwargs["M"] = _sparse_operand(kwargs["M"])[0]
        x, info = getattr(sla, name)(m, _unwrap(b, [dev]), x0=x0h, **kwargs)
        return FakeArray(np.asarray(x), dev), info
    solver.__name__ = name
    return solver


def _fake_splu(A: Any, **kwargs: Any) -> _FakeSuperLU:  # noqa: N803
    import scipy.sparse.linalg as sla

    m, dev = _sparse_operand(A)
    return _FakeSuperLU(sla.splu(m.tocsc(), **kwargs), dev)


def _fake_spilu(A: Any, **kwargs: Any) -> _FakeSuperLU:  # noqa: N803
    import scipy.sparse.linalg as sla

    m, dev = _sparse_operand(A)
    return _FakeSuperLU(sla.spilu(m.tocsc(), **kwargs), dev)


def _fake_eigsh(a: Any, k: int = 6, *, which: str = "LM", v0: Any = None, ncv: Any = None, maxiter: Any = None,
                tol: float = 0, return_eigenvectors: bool = True) -> Any:
    """cupyx's ``eigsh`` (keyword-only options; no shift-invert)."""
    import scipy.sparse.linalg as sla

    m, dev = _sparse_operand(a)
    start = None if v0 is None else _unwrap(v0, [dev])
    out = sla.eigsh(m, k=k, which=which, v0=start, ncv=ncv, maxiter=maxiter, tol=tol,
                    return_eigenvectors=return_eigenvectors)
    if not return_eigenvectors:
        return FakeArray(np.asarray(out), dev)
    return FakeArray(np.asarray(out[0]), dev), FakeArray(np.asarray(out[1]), dev)


def _fake_least_squares(name: str) -> Callable:
    """cupyx's ``lsqr``/``lsmr``: ``x`` and the diagnostics come back on the device."""
    def solver(A: Any, b: Any, **kwargs: Any) -> tuple:  # noqa: N803
        import scipy.sparse.linalg as sla

        m, dev = _sparse_operand(A)
        out = getattr(sla, name)(m, _unwrap(b, [dev]), **kwargs)
        return (FakeArray(np.asarray(out[0]), dev),) + tuple(FakeArray(np.asarray(v, dtype=float), dev)
                                                               for v in out[1:])
    solver.__name__ = name
    return solver


try:
    import scipy.sparse  # noqa: F401

    fake.scipy_sparse = types.ModuleType("fakecupy.scipy_sparse")
    fake.scipy_sparse.csr_matrix = _FakeCsr
    fake.scipy_sparse.csc_matrix = _FakeCsc
    fake.scipy_sparse.coo_matrix = _FakeCoo
    fake.scipy_sparse.issparse = lambda x: isinstance(x, _FakeSparseMatrix)
    fake.scipy_sparse.linalg = types.ModuleType("fakecupy.scipy_sparse.linalg")
    fake.scipy_sparse.linalg.splu = _fake_splu
    fake.scipy_sparse.linalg.spilu = _fake_spilu
    fake.scipy_sparse.linalg.LinearOperator = _FakeLinearOperator
    fake.scipy_sparse.linalg.eigsh = _fake_eigsh
    for _solver in ("cg", "gmres", "bicgstab", "minres"):
        setattr(fake.scipy_sparse.linalg, _solver, _fake_iterative(_solver))
    for _solver in ("lsqr", "lsmr"):
        setattr(fake.scipy_sparse.linalg, _solver, _fake_least_squares(_solver))
except ImportError:  # pragma: no cover
    pass

fake.cuda = types.ModuleType("fakecupy.cuda")
fake.cuda.Device = _FakeDevice
fake.cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 2)
fake.float_ = np.float64


def to_fake(x: Any, dev: int = 0) -> Any:
    """A host array (or pytree of them) on the fake device, counting one upload per array."""
    if isinstance(x, dict):
        return {k: to_fake(v, dev) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not isinstance(x, np.ndarray):
        return type(x)(to_fake(v, dev) for v in x)
    if isinstance(x, (np.ndarray, np.generic)):
        _h2d()
        return FakeArray(np.array(x), dev)
    return x


# --------------------------------------------------------------------------
# funcgrad registration

def _backend_class() -> type:
    from funcgrad.backend import Backend

    class FakeBackend(Backend):
        """funcgrad's view of the fake device: platform ``'fake'`` (or ``'cuda'`` under as_cuda())."""

        def __init__(self, platform: str = "fake"):
            self.platform = platform

        def namespace(self) -> Any:
            return fake

        def array_types(self) -> tuple[type, ...]:
            return (FakeArray,)

        def device_count(self) -> int:
            return 2

        def device_id(self, x: Any) -> int:
            return x._dev

        def from_host(self, x: np.ndarray, device_id: int) -> Any:
            with _FakeDevice(device_id):
                return asarray(np.asarray(x))

        def to_device(self, x: Any, device_id: int) -> Any:
            if x._dev == device_id:
                return x
            return FakeArray(x._a.copy(), device_id)

        def to_host(self, x: Any) -> np.ndarray:
            return x.get()

        def creation_scope(self, device_id: int) -> Any:
            return _FakeDevice(device_id)

        def scatter(self, out: Any, index: Any, values: Any, op: str = "add") -> None:
            _scatter(out, index, values, getattr(np, op))

    return FakeBackend


_installed: list = []


def install() -> Any:
    """Register the fake backend with funcgrad (platform 'fake'); idempotent."""
    if _installed:
        return _installed[0]
    from funcgrad import backend

    b = _backend_class()("fake")
    backend.register_backend(b, replace=True)
    _installed.append(b)
    return b


def FakeBackend(platform: str = "fake") -> Any:  # noqa: N802  (a factory that reads like the class)
    return _backend_class()(platform)


@contextlib.contextmanager
def as_cuda() -> Iterator[Any]:
    """Serve ``'cuda'`` device strings with the fake backend inside the block."""
    from funcgrad import backend

    install()
    b = FakeBackend("cuda")
    old = backend.register_backend(b, replace=True)
    try:
        yield b
    finally:
        backend._BACKENDS["cuda"] = old
        backend._BACKEND_BY_NAMESPACE[id(fake)] = _installed[0]


# --------------------------------------------------------------------------
# ElementwiseKernel: a stand-in for cupy.ElementwiseKernel (opt-in: elementwise_kernels())
#
# It checks the parameter declarations and parses the body at construction (as CuPy's
# compiler would reject it), then evaluates the body with the fake namespace's array
# functions. It knows the small C subset funcgrad's CUDA backend emits (see
# funcgrad/jit/cuda_ops.py): typed parameters, one statement a line (`ctype name = expr;`
# or `name = expr;`), names, decimal literals, true/false, calls of math functions and of
# type conversions, unary - and !, binary + - * /, comparisons, && and ||, c ? a : b.

import re as _re

_KERNEL_DTYPES = {"float64": np.float64, "float32": np.float32, "complex128": np.complex128,
                  "complex64": np.complex64, "bool": np.bool_}
_KERNEL_CTYPES = {"double": np.float64, "float": np.float32, "complex<double>": np.complex128,
                  "complex<float>": np.complex64, "bool": np.bool_}
_KERNEL_FUNCTIONS = {"pow": "power", "fabs": "absolute", "atan": "arctan", "asin": "arcsin", "acos": "arccos",
                     "atanh": "arctanh", "asinh": "arcsinh", **{n: n for n in (
                         "sin", "cos", "tan", "tanh", "sinh", "cosh", "exp", "log", "sqrt", "log1p", "expm1",
                         "log10", "log2", "exp2")}}
_TOKEN = _re.compile(r"\s*(complex<(?:double|float)>|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|"
                     r"[A-Za-z_]\w*|&&|\|\||[<>=!]=|[-+*/<>!?:(),=])")
# binary operators by precedence (higher binds tighter)
_BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6}
KERNEL_STATS = {"built": 0, "calls": 0}
KERNELS: list = []  # every stand-in kernel built, in order


class KernelSourceError(ValueError):
    """A kernel's parameters or body are outside what the stand-in (and CuPy) accepts."""


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise KernelSourceError(f"cannot read kernel source at {text[pos:pos + 20]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


class _Parser:
    """Expressions of the subset as nested tuples: ("num", v) ("name", n) ("call", f, args)
    ("unary", op, x) ("binary", op, a, b) ("cond", c, a, b)."""

    def __init__(self, tokens: list[str]):
        self.toks, self.k = tokens, 0

    def peek(self) -> str | None:
        return self.toks[self.k] if self.k < len(self.toks) else None

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (want is not None and tok != want):
            raise KernelSourceError(f"expected {want or 'more'} in kernel source, found {tok!r}")
        self.k += 1
        return tok

    def expr(self) -> tuple:
        c = self.binary(1)
        if self.peek() == "?":
            self.take("?")
            a = self.expr()
            self.take(":")
            return ("cond", c, a, self.expr())
        return c

    def binary(self, level: int) -> tuple:
        left = self.unary()
        while self.peek() in _BINARY and _BINARY[self.peek()] >= level:  # type: ignore[index]
            op = self.take()
            left = ("binary", op, left, self.binary(_BINARY[op] + 1))
        return left

    def unary(self) -> tuple:
        if self.peek() in ("-", "!"):
            return ("unary", self.take(), self.unary())
        return self.primary()

    def primary(self) -> tuple:
        tok = self.take()
        if tok == "(":
            e = self.expr()
            self.take(")")
            return e
        if tok[0].isdigit() or tok[0] == ".":
            return ("num", float(tok) if any(c in tok for c in ".eE") else int(tok))
        if tok in ("true", "false"):
            return ("num", tok == "true")
        if not (tok[0].isalpha() or tok[0] == "_"):
            raise KernelSourceError(f"unexpected {tok!r} in kernel source")
        if self.peek() == "(":
            if tok not in _KERNEL_FUNCTIONS and tok not in _KERNEL_CTYPES:
                raise KernelSourceError(f"unknown function {tok!r} in kernel source (known: "
                                        f"{', '.join(sorted(_KERNEL_FUNCTIONS))} and the conversions "
                                        f"{', '.join(_KERNEL_CTYPES)})")
            self.take("(")
            args = [self.expr()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.expr())
            self.take(")")
            return ("call", tok, args)
        return ("name", tok)


def _names_in(node: tuple) -> Iterator[str]:
    if node[0] == "name":
        yield node[1]
    for part in node[1:]:
        if isinstance(part, tuple):
            yield from _names_in(part)
        elif isinstance(part, list):
            for p in part:
                yield from _names_in(p)


def _params(text: str, what: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for decl in (p.strip() for p in text.split(",")) if text.strip() else ():
        parts = decl.split()
        if len(parts) != 2 or parts[0] not in _KERNEL_DTYPES or not _re.fullmatch(r"[A-Za-z_]\w*", parts[1]):
            raise KernelSourceError(f"{what} parameter {decl!r} is not '<dtype> <name>' with a dtype of "
                                    f"{', '.join(_KERNEL_DTYPES)}")
        if parts[1] in [n for n, _ in found] or parts[1] in ("i", "_ind"):
            raise KernelSourceError(f"{what} parameter name {parts[1]!r} is repeated or reserved")
        found.append((parts[1], _KERNEL_DTYPES[parts[0]]))
    return found


class FakeElementwiseKernel:
    """``cupy.ElementwiseKernel(in_params, out_params, operation, name, return_tuple=..., options=...)``
    on the fake device (see the comment above)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False,
                 return_tuple: bool = False, options: tuple = (), **_: Any):
        self.in_params, self.out_params, self.operation, self.name = in_params, out_params, operation, name
        self.options, self.return_tuple = tuple(options), return_tuple
        if not _re.fullmatch(r"[A-Za-z_]\w*", name):
            raise KernelSourceError(f"kernel name {name!r} is not a C identifier")
        self.ins = _params(in_params, "input")
        self.outs = _params(out_params, "output")
        if not self.outs:
            raise KernelSourceError("a kernel needs an output parameter")
        clash = {n for n, _ in self.ins} & {n for n, _ in self.outs}
        if clash:
            raise KernelSourceError(f"{sorted(clash)} declared as both input and output")
        known = {n for n, _ in self.ins} | {n for n, _ in self.outs}
        outs = {n for n, _ in self.outs}
        self.statements: list[tuple[str, Any, tuple]] = []  # (target, local dtype or None, expression)
        assigned: set[str] = set()
        for line in operation.strip().splitlines():
            line = line.strip()
            if not line.endswith(";"):
                raise KernelSourceError(f"kernel statement {line!r} does not end with ';'")
            toks = _tokens(line[:-1])
            local = None
            if toks and toks[0] in _KERNEL_CTYPES:
                local = _KERNEL_CTYPES[toks.pop(0)]
            if len(toks) < 3 or toks[1] != "=" or not _re.fullmatch(r"[A-Za-z_]\w*", toks[0]):
                raise KernelSourceError(f"kernel statement {line!r} is not 'name = expression;'")
            target = toks[0]
            if local is None and target not in outs:
                raise KernelSourceError(f"kernel statement {line!r} assigns {target!r}, which is not an output")
            if local is not None and target in known:
                raise KernelSourceError(f"kernel statement {line!r} declares {target!r} again")
            parser = _Parser(toks[2:])
            tree = parser.expr()
            if parser.peek() is not None:
                raise KernelSourceError(f"unexpected {parser.peek()!r} in kernel statement {line!r}")
            missing = set(_names_in(tree)) - known - assigned
            if missing:
                raise KernelSourceError(f"kernel statement {line!r} reads {sorted(missing)} before they exist")
            known.add(target)
            assigned.add(target)
            self.statements.append((target, local, tree))
        if outs - assigned:
            raise KernelSourceError(f"kernel outputs {sorted(outs - assigned)} are never assigned")
        KERNEL_STATS["built"] += 1
        KERNELS.append(self)

    def _eval(self, node: tuple, env: dict) -> Any:
        what = node[0]
        if what == "num":
            return node[1]
        if what == "name":
            return env[node[1]]
        if what == "call":
            args = [self._eval(a, env) for a in node[2]]
            if node[1] in _KERNEL_CTYPES:
                (x,) = args
                dt = _KERNEL_CTYPES[node[1]]
                return x.astype(dt) if type(x) is FakeArray else dt(x)
            return getattr(fake, _KERNEL_FUNCTIONS[node[1]])(*args)
        if what == "unary":
            x = self._eval(node[2], env)
            return -x if node[1] == "-" else fake.logical_not(x)
        if what == "cond":
            return fake.where(self._eval(node[1], env), self._eval(node[2], env), self._eval(node[3], env))
        op, a, b = node[1], self._eval(node[2], env), self._eval(node[3], env)
        if op == "&&":
            return fake.logical_and(a, b)
        if op == "||":
            return fake.logical_or(a, b)
        return {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a / b,
                "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
                "==": lambda: a == b, "!=": lambda: a != b}[op]()

    def __call__(self, *args: Any, size: Any = None, block_size: Any = None, stream: Any = None) -> Any:
        n_in = len(self.ins)
        if len(args) not in (n_in, n_in + len(self.outs)):
            raise TypeError(f"{self.name} takes {n_in} inputs (and optionally {len(self.outs)} outputs), "
                            f"got {len(args)} arguments")
        env: dict[str, Any] = {}
        devs, shapes = set(), []
        for (name, dt), x in zip(self.ins, args[:n_in]):
            if type(x) is FakeArray:
                if x.dtype != np.dtype(dt):
                    raise TypeError(f"{self.name}: input {name} is declared {np.dtype(dt)} but got {x.dtype}")
                devs.add(x._dev)
                shapes.append(x.shape)
                env[name] = x
            elif isinstance(x, _SCALARS):
                env[name] = dt(x)
            else:
                raise TypeError(f"{self.name}: input {name} must be a fake device array or a scalar, got "
                                f"{type(x).__name__}")
        if len(devs) > 1:
            raise ValueError(f"{self.name}: inputs on devices {sorted(devs)}")
        dev = devs.pop() if devs else _current_device()
        given = list(args[n_in:])
        shape = np.broadcast_shapes(*shapes, *(o.shape for o in given))
        KERNEL_STATS["calls"] += 1
        with np.errstate(all="ignore"):
            for target, local, tree in self.statements:
                value = self._eval(tree, env)
                env[target] = value if local is None else (
                    value.astype(local) if type(value) is FakeArray else local(value))
        results = []
        for j, (name, dt) in enumerate(self.outs):
            out = given[j] if given else FakeArray(np.empty(shape, dt), dev)
            out[...] = env[name]
            results.append(out)
        return tuple(results) if self.return_tuple or len(results) > 1 else results[0]


@contextlib.contextmanager
def elementwise_kernels() -> Iterator[None]:
    """Give the fake namespace CuPy's ``ElementwiseKernel`` (:class:`FakeElementwiseKernel`) inside
    the block, so that code which compiles kernels on CuPy (``fg.jit``'s CUDA backend) does so here."""
    old = getattr(fake, "ElementwiseKernel", None)
    fake.ElementwiseKernel = FakeElementwiseKernel
    try:
        yield
    finally:
        if old is None:
            del fake.ElementwiseKernel
        else:
            fake.ElementwiseKernel = old
