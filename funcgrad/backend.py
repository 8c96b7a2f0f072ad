"""Array namespaces and devices: which library (numpy, cupy, ...) owns an array.

Every array operation in funcgrad goes through the namespace of the arrays it
is given, so device arrays never round-trip through the host. NumPy is the
default; CuPy is found lazily (importing funcgrad never imports CuPy: a CuPy
array is recognised by its type's module the first time one shows up, and
``fg.devices("cuda")`` imports CuPy on request). Other array libraries, and the
test-suite's fake device backend, plug in with :func:`register_backend`.

Devices::

    fg.devices()                      # [Device('cpu'), Device('cuda:0'), ...]
    fg.device_put(tree, "cuda")       # every array leaf to GPU 0 (explicit copy)
    fg.to_numpy(tree)                 # every array leaf to the host (explicit copy)
    fg.default_device()               # where creation functions put new arrays
    with fg.default_device("cuda"):   # ... inside this block: on GPU 0
        x = fnp.zeros(3)

Operations never move data on their own: mixing a host NumPy array with a
device array (or arrays of two backends) in one operation raises an error that
names both devices. Python and NumPy scalars combine with arrays on any device,
as they do in CuPy.
"""

from __future__ import annotations

import importlib

import os
import sys
import threading
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from .core import shape_of, unbox_all

__all__ = [
    "Device", "Backend", "namespace_of", "register_namespace", "register_backend", "get_backend",
    "devices", "device_of", "default_device", "set_default_device", "device_put", "to_numpy",
    "shape_of", "dtype_of", "is_float_dtype", "scatter", "scatter_add", "DeviceError", "device_constant", "fused", "FusedSpec",
    "namespace_of_type",
]


class DeviceError(RuntimeError):
    """A device was asked for that is not available (no CuPy, no visible GPU, bad index)."""


# type -> namespace module. Python and NumPy scalars count as NumPy.
_NAMESPACE_BY_TYPE: dict[type, Any] = {
    np.ndarray: np,
    float: np,
    int: np,
    bool: np,
    complex: np,
}
_registered: list[tuple[type, Any]] = []

# Types that a plain NumPy call accepts as-is: host arrays, Python and NumPy scalars.
NUMPY_FAST_TYPES: frozenset[type] = frozenset(
    [np.ndarray, float, int, bool, complex, type(None)]
    + [getattr(np, n) for n in ("float16", "float32", "float64", "longdouble", "complex64", "complex128",
                                "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool_")]
)


# --------------------------------------------------------------------------
# devices

class Device:
    """A place where arrays live: ``Device('cpu')``, ``Device('cuda:0')``, ...

    Get them from :func:`devices` (or pass a string such as ``"cuda"`` or
    ``"cuda:1"`` wherever a device is expected). A device is also a context
    manager that makes it the default for array creation::

        with fg.devices("cuda")[0]:
            w = fnp.zeros((3, 3))      # on GPU 0
    """

    __slots__ = ("platform", "id")

    def __init__(self, platform: str, id: int = 0):  # noqa: A002
        self.platform = platform
        self.id = int(id)

    @property
    def backend(self) -> "Backend":
        return get_backend(self.platform)

    @property
    def namespace(self) -> Any:
        """The array namespace (numpy, cupy, ...) of arrays on this device."""
        return self.backend.namespace()

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            try:
                other = as_device(other)
            except (ValueError, DeviceError):
                return False
        return isinstance(other, Device) and self.platform == other.platform and self.id == other.id

    def __hash__(self) -> int:
        return hash((self.platform, self.id))

    def __str__(self) -> str:
        return "cpu" if self.platform == "cpu" else f"{self.platform}:{self.id}"

    def __repr__(self) -> str:
        return f"Device('{self}')"

    def __enter__(self) -> "Device":
        _default_stack().append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        stack = _default_stack()
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:  # odd exit orders: drop the innermost entry for this device
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is self:
                    del stack[i]
                    break


CPU = Device("cpu", 0)


# --------------------------------------------------------------------------
# backends

class Backend:
    """How funcgrad talks to one array library (subclass and :func:`register_backend`).

    The CPU backend is NumPy; the ``cuda`` backend is CuPy. A backend names a
    ``platform`` (the part of a device string before the colon) and answers:
    its namespace module, the array type(s) it owns, how many devices it has,
    which device an array is on, and how to copy arrays to and from the host.
    """

    platform = "cpu"

    def namespace(self) -> Any:
        return np

    def array_types(self) -> tuple[type, ...]:
        return (np.ndarray,)

    def device_count(self) -> int:
        return 1

    def device_id(self, x: Any) -> int:
        return 0

    def from_host(self, x: np.ndarray, device_id: int) -> Any:
        """A copy of host array ``x`` on device ``device_id``."""
        return np.array(x, copy=True)

    def to_device(self, x: Any, device_id: int) -> Any:
        """``x`` (an array of this backend) on device ``device_id`` of this backend."""
        return x

    def to_host(self, x: Any) -> np.ndarray:
        """A host (NumPy) copy of ``x``, an array of this backend."""
        return np.asarray(x)

    def creation_scope(self, device_id: int) -> Any:
        """A context manager within which ``namespace().zeros(...)`` lands on ``device_id``."""
        return _NullScope()

    def synchronize(self, x: Any) -> None:
        """Wait until the work producing ``x`` has finished (host arrays: already done)."""
        wait = getattr(getattr(x, "device", None), "synchronize", None)
        if wait is not None:   # CuPy: the array's device waits for its streams
            wait()

    def scatter(self, out: Any, index: Any, values: Any, op: str = "add") -> None:
        """``numpy.<op>.at(out, index, values)`` in place: repeated indices all apply.

        ``op`` is ``'add'``, ``'maximum'`` or ``'minimum'`` (what CuPy's ``cupyx.scatter_add``,
        ``scatter_max`` and ``scatter_min`` do). A namespace answers with its
        ``scatter_<add|max|min>`` function or, failing that, ``<op>.at``.
        """
        xp = self.namespace()
        fn = getattr(xp, _SCATTER_NAMES.get(op, ""), None)
        if fn is not None:
            fn(out, index, values)
            return
        at = getattr(getattr(xp, op, None), "at", None)
        if at is None:
            raise NotImplementedError(
                f"{getattr(xp, '__name__', xp)} has no {_SCATTER_NAMES.get(op, op)} or {op}.at (a scatter "
                f"with repeated indices), which funcgrad needs here (derivatives of indexing, x.at[...])"
            )
        at(out, index, values)

    def describe(self, x: Any) -> str:
        return f"{self.platform}:{self.device_id(x)}"

    def elementwise_kernel(self, spec: "FusedSpec") -> Any:
        """A compiled single-launch kernel for ``spec``, or None to use its fallback.

        A namespace with CuPy's ``ElementwiseKernel`` (CuPy itself) gets one,
        built once per backend and cached.
        """
        factory = getattr(self.namespace(), "ElementwiseKernel", None)
        if factory is None:
            return None
        cache = self.__dict__.setdefault("_kernels", {})
        k = cache.get(spec.name)
        if k is None:
            k = cache[spec.name] = factory(spec.in_params, spec.out_params, spec.operation, spec.name)
        return k


class _NullScope:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


class _CPUBackend(Backend):
    platform = "cpu"

    def elementwise_kernel(self, spec: "FusedSpec") -> Any:
        return None  # NumPy: the fallback (vectorized NumPy) is the kernel

    def scatter(self, out: Any, index: Any, values: Any, op: str = "add") -> None:
        # NumPy 2.4's ufunc.at misreads broadcast (stride-0) values: give it full ones.
        target = out[index].shape
        values = np.asarray(values)
        if values.shape != target:
            if values.ndim > len(target):  # assignment drops leading unit axes
                values = values.reshape(values.shape[values.ndim - len(target):])
            values = np.ascontiguousarray(np.broadcast_to(values, target))
        getattr(np, op).at(out, index, values)

    def describe(self, x: Any) -> str:
        return "cpu"


_INSTALL_CUPY = (
    "install the cuda extra, pip install 'funcgrad[cuda]', or the CuPy wheel that matches your CUDA "
    "toolkit (e.g. pip install cupy-cuda12x)"
)


class _CuPyBackend(Backend):
    """NVIDIA GPUs through CuPy; CuPy is imported on first use only."""

    platform = "cuda"

    def __init__(self) -> None:
        self._cupy: Any = None
        self._count: int | None = None

    def namespace(self) -> Any:
        cp: Any = self._cupy
        if cp is None:
            try:
                cp = importlib.import_module("cupy")  # lazily, only for GPU users
            except ImportError as e:
                raise DeviceError(
                    f"GPU arrays need CuPy, which could not be imported ({e}); {_INSTALL_CUPY}"
                ) from e
            self._cupy = cp
            register_namespace(cp.ndarray, cp)
            _BACKEND_BY_NAMESPACE[id(cp)] = self
        return cp

    def array_types(self) -> tuple[type, ...]:
        return (self.namespace().ndarray,)

    def device_count(self) -> int:
        if self._count is None:
            cp = self.namespace()
            try:
                self._count = int(cp.cuda.runtime.getDeviceCount())
            except Exception:  # CUDARuntimeError: no driver, no device ...
                self._count = 0
        return self._count

    def require(self, device_id: int) -> None:
        n = self.device_count()
        if n == 0:
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            hint = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
            raise DeviceError(
                f"CuPy is installed but no CUDA device is visible{hint}: check the NVIDIA driver "
                f"(nvidia-smi) and CUDA_VISIBLE_DEVICES, or use the CPU (device 'cpu')"
            )
        if not 0 <= device_id < n:
            raise DeviceError(f"there is no device cuda:{device_id}; {n} CUDA device(s) visible: cuda:0..cuda:{n - 1}")

    def device_id(self, x: Any) -> int:
        return int(x.device.id)

    def from_host(self, x: np.ndarray, device_id: int) -> Any:
        self.require(device_id)
        cp = self.namespace()
        with cp.cuda.Device(device_id):
            return cp.array(x, copy=True)

    def to_device(self, x: Any, device_id: int) -> Any:
        if int(x.device.id) == device_id:
            return x
        self.require(device_id)
        cp = self.namespace()
        with cp.cuda.Device(device_id):
            return cp.array(x, copy=True)  # a device-to-device (peer) copy

    def to_host(self, x: Any) -> np.ndarray:
        host: np.ndarray = x.get()
        return host

    def creation_scope(self, device_id: int) -> Any:
        self.require(device_id)
        return self.namespace().cuda.Device(device_id)

    def scatter(self, out: Any, index: Any, values: Any, op: str = "add") -> None:
        name = _SCATTER_NAMES.get(op)
        if name is None:
            raise NotImplementedError(
                f"CuPy has no scatter for {op!r} (cupyx has scatter_add, scatter_max and scatter_min)"
            )
        cupyx = importlib.import_module("cupyx")
        getattr(cupyx, name)(out, index, values)


_SCATTER_NAMES = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}
_CPU_BACKEND = _CPUBackend()
_BACKENDS: dict[str, Backend] = {"cpu": _CPU_BACKEND, "cuda": _CuPyBackend()}
_ALIASES = {"gpu": "cuda", "host": "cpu", "numpy": "cpu", "cupy": "cuda"}
_BACKEND_BY_NAMESPACE: dict[int, Backend] = {id(np): _CPU_BACKEND}


def register_namespace(array_type: type, namespace: Any) -> None:
    """Route arrays of ``array_type`` (and subclasses) to ``namespace``."""
    _registered.append((array_type, namespace))
    _NAMESPACE_BY_TYPE[array_type] = namespace


def register_backend(backend: Backend, *, replace: bool = False) -> Backend | None:
    """Make ``backend`` serve device strings ``'<backend.platform>[:i]'`` and own its array types.

    Returns the backend it replaced (with ``replace=True``), so a test can put it back.
    """
    name = backend.platform
    old = _BACKENDS.get(name)
    if old is not None and old is not backend and not replace:
        raise ValueError(f"a backend for platform {name!r} is already registered; pass replace=True")
    _BACKENDS[name] = backend
    xp = backend.namespace()
    _BACKEND_BY_NAMESPACE[id(xp)] = backend
    for t in backend.array_types():
        register_namespace(t, xp)
    return old


def get_backend(platform: str) -> Backend:
    """The backend serving ``platform`` ('cpu', 'cuda', ...)."""
    name = _ALIASES.get(platform, platform)
    b = _BACKENDS.get(name)
    if b is None:
        raise ValueError(
            f"unknown device platform {platform!r}; known: {', '.join(sorted(_BACKENDS))} "
            f"(a device is 'cpu', 'cuda', 'cuda:1', or an fg.Device from fg.devices())"
        )
    return b


def _backend_of_namespace(xp: Any) -> Backend:
    b = _BACKEND_BY_NAMESPACE.get(id(xp))
    if b is None:
        name = getattr(xp, "__name__", "")
        if name == "cupy":
            b = _BACKENDS["cuda"]
            b.namespace()
        else:
            b = Backend()  # a namespace registered without a backend: treat as one device
            b.platform = name or type(xp).__name__
            b.namespace = lambda: xp  # type: ignore[method-assign]
            _BACKEND_BY_NAMESPACE[id(xp)] = b
    return b


def as_device(spec: Any) -> Device:
    """A :class:`Device` from ``'cpu'``, ``'cuda'``, ``'cuda:1'``, a Device, a CuPy device,
    or anything whose ``str()`` is such a string (the Tensor layer's devices)."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return default_device()
    if not isinstance(spec, str):
        mod = type(spec).__module__ or ""
        if mod.startswith("cupy") and hasattr(spec, "id"):  # cupy.cuda.Device
            return Device("cuda", int(spec.id))
        spec = str(spec)
    text = spec.strip().lower()
    platform, _, index = text.partition(":")
    platform = _ALIASES.get(platform, platform)
    get_backend(platform)  # validates the platform
    if index:
        try:
            i = int(index)
        except ValueError:
            raise ValueError(f"bad device string {spec!r}: expected '<platform>' or '<platform>:<index>'") from None
    else:
        i = 0
    if platform == "cpu" and i != 0:
        raise ValueError(f"there is one CPU device, 'cpu'; got {spec!r}")
    return CPU if platform == "cpu" else Device(platform, i)


def devices(platform: str | None = None) -> list[Device]:
    """The devices arrays can live on.

    With no argument: the CPU, then every GPU that CuPy sees (none when CuPy is
    missing or no GPU is visible), then devices of other registered backends.
    With a platform (``'cpu'``, ``'cuda'``, ...): that platform's devices; asking
    for ``'cuda'`` without CuPy or without a visible GPU raises a
    :class:`DeviceError` that says what to install or that no device is visible.

    Example::

        fg.devices()          # [Device('cpu')] on a machine without a GPU
        fg.devices("cuda")    # [Device('cuda:0'), ...]
    """
    if platform is not None:
        b = get_backend(platform)
        n = b.device_count()
        if n == 0 and isinstance(b, _CuPyBackend):
            b.require(0)
        return [CPU] if b.platform == "cpu" else [Device(b.platform, i) for i in range(n)]
    out = [CPU]
    for name, b in _BACKENDS.items():
        if name == "cpu":
            continue
        try:
            n = b.device_count()
        except DeviceError:
            continue
        out.extend(Device(name, i) for i in range(n))
    return out


# --------------------------------------------------------------------------
# the default device for creation

_local = threading.local()
_global_default: list[Device] = [CPU]


def _default_stack() -> list[Device]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def default_device(device: Any = None) -> Device:
    """The device where creation functions (``fnp.zeros``, ``fnp.array`` ...) put new arrays.

    ``fg.default_device()`` returns it (the CPU unless set). Given a device,
    it returns that :class:`Device`, which is a context manager setting the
    default inside a ``with`` block (per thread)::

        with fg.default_device("cuda"):
            x = fnp.ones(3)          # on GPU 0
        fg.default_device()          # Device('cpu') again

    Use :func:`set_default_device` to change it for the whole program.
    Operations on existing arrays always run where their inputs are.
    """
    if device is not None:
        dev = as_device(device)
        if dev.platform != "cpu":
            b = dev.backend
            if isinstance(b, _CuPyBackend):
                b.require(dev.id)
        return dev
    stack = getattr(_local, "stack", None)
    if stack:
        top: Device = stack[-1]
        return top
    return _global_default[0]


def _default_is_cpu() -> bool:
    stack = getattr(_local, "stack", None)
    return (stack[-1] if stack else _global_default[0]).platform == "cpu"


def set_default_device(device: Any) -> Device:
    """Set the default creation device for every thread (``None`` or ``'cpu'``: the CPU).

    Returns the previous default. Inside ``with fg.default_device(...)`` blocks,
    the block's device wins.
    """
    old = _global_default[0]
    _global_default[0] = CPU if device is None else default_device(device)
    return old


# --------------------------------------------------------------------------
# namespaces of arrays

def _lookup(t: type) -> Any:
    for array_type, ns in _registered:
        if issubclass(t, array_type):
            _NAMESPACE_BY_TYPE[t] = ns
            return ns
    if issubclass(t, (np.ndarray, np.generic)):
        _NAMESPACE_BY_TYPE[t] = np
        return np
    mod = getattr(t, "__module__", "") or ""
    if mod.startswith("cupy") and "cupy" in sys.modules:  # a CuPy array: register CuPy now
        cp = _BACKENDS["cuda"].namespace()
        if issubclass(t, cp.ndarray):
            _NAMESPACE_BY_TYPE[t] = cp
            return cp
    return np


def namespace_of_type(t: type) -> Any:
    """The array namespace owning values of type ``t`` (NumPy for host arrays, scalars and
    unknown types): what a compiler needs when it has a traced value's type, not the value.

    Example::

        namespace_of_type(np.ndarray)   # numpy
    """
    ns = _NAMESPACE_BY_TYPE.get(t)
    return ns if ns is not None else _lookup(t)


def namespace_of(*xs: Any) -> Any:
    """The array namespace (numpy, cupy, ...) of the given arrays.

    Python and NumPy scalars defer to arrays. Arrays of two different backends
    (a host NumPy array and a CuPy array, say) are an error naming both
    devices, not a silent copy.
    """
    if len(xs) == 1 and type(xs[0]) is np.ndarray:  # the commonest call: one host array
        return np
    found = None
    found_x = None
    host_x = None
    for x in xs:
        t = type(x)
        ns = _NAMESPACE_BY_TYPE.get(t)
        if ns is None:
            x = unbox_all(x)
            t = type(x)
            ns = _NAMESPACE_BY_TYPE.get(t) or _lookup(t)
        if ns is np:
            if host_x is None and t is not float and t is not int and isinstance(x, np.ndarray):
                host_x = x
            continue
        if found is None:
            found, found_x = ns, x
        elif found is not ns:
            raise _mixed_error(found_x, x)
    if found is None:
        return np
    if host_x is not None:
        raise _mixed_error(host_x, found_x)
    return found


def _describe(x: Any) -> str:
    x = unbox_all(x)
    ns = namespace_of(x) if not isinstance(x, np.ndarray) else np
    b = _backend_of_namespace(ns)
    try:
        where = b.describe(x)
    except Exception:
        where = b.platform
    return f"{where} ({type(x).__module__}.{type(x).__name__} of shape {tuple(getattr(x, 'shape', ()))})"


def _mixed_error(a: Any, b: Any) -> ValueError:
    return ValueError(
        f"arrays on different devices in one operation: {_describe(a)} and {_describe(b)}. funcgrad "
        f"never copies between devices implicitly; move one of them first, e.g. "
        f"fg.device_put(x, 'cuda') or fg.device_put(x, 'cpu')"
    )


def device_of(x: Any) -> Device:
    """The :class:`Device` an array (or traced value) lives on; scalars are on the CPU.

    Example::

        fg.device_of(fnp.zeros(3))   # Device('cpu')
    """
    x = unbox_all(x)
    ns = namespace_of(x)
    if ns is np:
        return CPU
    b = _backend_of_namespace(ns)
    return Device(b.platform, b.device_id(x))


def backend_of(x: Any) -> Backend:
    """The backend owning array ``x``."""
    return _backend_of_namespace(namespace_of(x))


def scatter(out: Any, index: Any, values: Any, op: str = "add") -> None:
    """``numpy.<op>.at(out, index, values)`` in place on ``out``'s backend, for ``op`` in
    'add', 'maximum', 'minimum' (``cupyx.scatter_add``/``scatter_max``/``scatter_min`` on CuPy)."""
    _backend_of_namespace(namespace_of(out)).scatter(out, index, values, op)


def scatter_add(out: Any, index: Any, values: Any) -> None:
    """``out[index] += values`` in place, repeated indices adding up, on ``out``'s backend
    (``numpy.add.at``; ``cupyx.scatter_add`` on CuPy)."""
    _backend_of_namespace(namespace_of(out)).scatter(out, index, values, "add")


# --------------------------------------------------------------------------
# fused elementwise kernels

_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class FusedSpec:
    """An elementwise computation as one kernel where the backend can compile it.

    ``in_params``/``out_params``/``operation`` are CuPy ``ElementwiseKernel``
    source (every argument of type ``T``); ``fallback(xp, *args)`` computes the
    same with the namespace's own functions and is used on NumPy, on backends
    without kernels, and for arguments the kernel does not take (Python
    scalars, mixed dtypes, dtypes other than float32/float64).
    """

    __slots__ = ("name", "in_params", "out_params", "operation", "fallback")

    def __init__(self, name: str, in_params: str, out_params: str, operation: str, fallback: Any):
        self.name = name
        self.in_params = in_params
        self.out_params = out_params
        self.operation = operation
        self.fallback = fallback


def fused(name: str, in_params: str, out_params: str, operation: str, fallback: Any) -> Any:
    """A function of arrays computed by one fused kernel launch on CuPy (``cupy.ElementwiseKernel``)
    and by ``fallback(xp, *args)`` elsewhere.

    Example::

        _sigmoid_grad = fused("fg_sigmoid_grad", "T g, T s", "T out", "out = g * s * (1 - s)",
                              lambda xp, g, s: g * s * (1 - s))
        _sigmoid_grad(g, s)     # NumPy: the fallback; CuPy: one kernel instead of three
    """
    spec = FusedSpec(name, in_params, out_params, operation, fallback)

    def call(*args: Any) -> Any:
        first = args[0]
        if type(first) is np.ndarray:
            return fallback(np, *args)
        xp = namespace_of(*args)
        if xp is not np:
            dt = getattr(first, "dtype", None)
            if dt in _FUSED_DTYPES and all(getattr(a, "dtype", None) == dt and hasattr(a, "shape") for a in args):
                k = _backend_of_namespace(xp).elementwise_kernel(spec)
                if k is not None:
                    return k(*args)
        return fallback(xp, *args)

    call.__name__ = call.__qualname__ = name
    call.spec = spec  # type: ignore[attr-defined]
    return call


# --------------------------------------------------------------------------
# small host constants (static index arrays) on a device, uploaded once

_CONST_CACHE: "OrderedDict[tuple[Any, ...], Any]" = OrderedDict()
_CONST_CACHE_SIZE = 512
_CONST_MAX_BYTES = 1 << 16
_const_lock = threading.Lock()


def device_constant(like: Any, host: Any) -> Any:
    """The host array ``host`` (static data: index arrays, masks) on the device of ``like``.

    NumPy arrays are returned as they are. For a device, small constants are
    uploaded once and cached (keyed by device, dtype, shape and bytes), so a
    rule called at every step does not copy to the device (a synchronous
    ``cudaMemcpy`` on CuPy's default stream) every time. The cached arrays are
    shared: never write into them.
    """
    xp = namespace_of(like)
    if xp is np:
        return host
    host = np.asarray(host)
    b = _backend_of_namespace(xp)
    dev_id = b.device_id(unbox_all(like))
    if host.nbytes > _CONST_MAX_BYTES or host.dtype.hasobject:
        with b.creation_scope(dev_id):
            return xp.asarray(host)
    key = (b.platform, dev_id, host.dtype.str, host.shape, host.tobytes())
    with _const_lock:
        hit = _CONST_CACHE.get(key)
        if hit is not None:
            _CONST_CACHE.move_to_end(key)
            return hit
    with b.creation_scope(dev_id):
        arr = xp.asarray(host)
    with _const_lock:
        _CONST_CACHE[key] = arr
        if len(_CONST_CACHE) > _CONST_CACHE_SIZE:
            _CONST_CACHE.popitem(last=False)
    return arr


# --------------------------------------------------------------------------
# explicit transfers

def _is_array_leaf(v: Any) -> bool:
    if isinstance(v, np.ndarray):
        return True
    if isinstance(v, (np.generic, bool, int, float, complex, str, bytes)) or v is None:
        return False
    ns = _NAMESPACE_BY_TYPE.get(type(v))
    if ns is None:
        ns = _lookup(type(v))
    return ns is not np


_traced_put: Any = None


def register_traced_put(fn: Callable[[Any, Device], Any]) -> None:
    """Register ``fn(x, device)``: the differentiable device copy ``device_put`` uses for a
    traced value (funcgrad.numpy registers one; the backend knows no derivatives)."""
    global _traced_put
    _traced_put = fn


def _put_one(v: Any, dev: Device) -> Any:
    from .core import Box

    if isinstance(v, Box):
        if _traced_put is None:  # pragma: no cover - funcgrad.numpy registers one on import
            raise TypeError("fg.device_put of a traced value needs funcgrad.numpy")
        return _traced_put(v, dev)
    if not _is_array_leaf(v):
        return v  # Python/NumPy scalars and non-array leaves combine with any device as they are
    return put_array(v, dev)


def put_array(v: Any, dev: Any) -> Any:
    """Array ``v`` (host or device, untraced) on device ``dev``; the same object if it is already there."""
    dev = as_device(dev)
    dst = dev.backend
    if isinstance(v, np.ndarray):
        if dst is _CPU_BACKEND:
            return v
        return dst.from_host(v, dev.id)
    src = backend_of(v)
    if src is dst:
        return dst.to_device(v, dev.id)
    host = src.to_host(v)
    return host if dst is _CPU_BACKEND else dst.from_host(host, dev.id)


def device_put(x: Any, device: Any = None) -> Any:
    """Copy an array, or every array leaf of a pytree, to ``device`` (explicitly).

    ``device`` is ``'cpu'``, ``'cuda'`` (GPU 0), ``'cuda:1'``, an
    :class:`Device`, or ``None`` for the default device. Leaves already on
    ``device`` are returned as they are (no copy). Works on models
    (``fg.nn`` modules), optimizer states and any other pytree; Python and
    NumPy scalars stay as they are (they combine with arrays on any device).
    Inside a transform the copy is differentiable: the derivative flows back
    to the device the value came from.

    Example::

        model = fg.device_put(model, "cuda")
        opt_state = opt.init(model)            # moments on the GPU too
        host_model = fg.device_put(model, "cpu")
    """
    from . import tree_util

    dev = as_device(device)
    if dev.platform != "cpu":
        b = dev.backend
        if isinstance(b, _CuPyBackend):
            b.require(dev.id)
        elif not 0 <= dev.id < b.device_count():
            raise DeviceError(f"there is no device {dev}; {b.platform} has {b.device_count()} device(s)")
    return tree_util.tree_map(lambda v: _put_one(v, dev), x)


def device_get(x: Any) -> Any:
    """Every leaf of the pytree ``x`` as a host NumPy array (JAX's ``jax.device_get``;
    the same as :func:`to_numpy`).

    Example::

        fg.device_get({"w": fg.device_put(fnp.ones(2), "cuda")})   # {"w": numpy array}
    """
    return to_numpy(x)


def block_until_ready(x: Any) -> Any:
    """Wait until every array of the pytree ``x`` is computed, and return ``x`` (JAX's
    ``jax.block_until_ready``: for timing GPU code; host arrays are always ready).

    Example::

        y = fg.block_until_ready(f(x))
    """
    from . import tree_util

    for leaf in tree_util.tree_leaves(x):
        v = unbox_all(leaf)
        if hasattr(v, "shape") and not isinstance(v, (np.ndarray, np.generic)):
            _backend_of_namespace(namespace_of(v)).synchronize(v)
    return x


def to_numpy(x: Any) -> Any:
    """Copy an array (or every leaf of a pytree) to a host NumPy array, explicitly.

    Example::

        fg.to_numpy(cupy_array)   # a numpy.ndarray
    """
    from . import tree_util

    def one(v: Any) -> Any:
        v = unbox_all(v)
        if isinstance(v, (np.ndarray, np.generic, int, float, complex, bool)):
            return np.asarray(v)
        ns = namespace_of(v)
        if ns is np:
            return np.asarray(v)
        return _backend_of_namespace(ns).to_host(v)

    return tree_util.tree_map(one, x)


# --------------------------------------------------------------------------
# creation on a device

def creation_namespace(device: Any = None) -> tuple[Any, Any]:
    """``(xp, scope)`` for creating arrays on ``device`` (``None``: the default device):
    call ``xp.zeros(...)`` inside ``with scope:``. On the CPU, ``(numpy, a no-op scope)``."""
    if device is None:
        stack = getattr(_local, "stack", None)
        dev = stack[-1] if stack else _global_default[0]
    else:
        dev = as_device(device)
    if dev.platform == "cpu":
        return np, _NULL_SCOPE
    b = dev.backend
    return b.namespace(), b.creation_scope(dev.id)


NULL_SCOPE = _NULL_SCOPE = _NullScope()


def dtype_of(x: Any) -> np.dtype[Any]:
    """The NumPy dtype of an array, traced value or scalar (``np.result_type`` of a scalar)."""
    x = unbox_all(x)
    d = getattr(x, "dtype", None)
    if isinstance(d, np.dtype):
        return d
    return np.dtype(d) if d is not None else np.result_type(x)


def is_float_dtype(dtype: Any) -> bool:
    """Floating or complex: the dtypes that can carry a derivative."""
    return np.dtype(dtype).kind in "fc"

