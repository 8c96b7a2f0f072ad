"""``ft.utils.data``: PyTorch's ``Dataset``, ``TensorDataset``, ``DataLoader``, samplers, ``random_split``
and ``Subset``, in one process (``num_workers`` other than 0 is accepted and runs in-process).

Shuffles draw from an ``ft.Generator`` (or ft's default generator), so a seeded
run repeats itself; the order is not PyTorch's for the same seed (different
random streams).

Example::

    ds = TensorDataset(x, y)
    train, val = random_split(ds, [0.8, 0.2], generator=ft.Generator().manual_seed(0))
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True, drop_last=True):
        ...
"""

from __future__ import annotations

import bisect
import itertools
import math
import numbers
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..creation import Generator, _rng, tensor
from ..dtypes import float64
from ..ops import stack
from ..tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "get_worker_info"]


class Dataset:
    """A map-style dataset: ``__getitem__(i)`` and (usually) ``__len__``. ``a + b`` concatenates."""

    def __getitem__(self, index: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is an iterable of samples (``__iter__``); the DataLoader batches it in order."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class TensorDataset(Dataset):
    """Samples are the ``i``-th rows of the tensors. Example: ``TensorDataset(x, y)[0] == (x[0], y[0])``."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = tensors[0].shape[0]
        if any(t.shape[0] != n for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    """Datasets one after another. Example: ``ConcatDataset([a, b])``."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        self.cumulative_sizes = list(np.cumsum([len(d) for d in self.datasets]))  # type: ignore[arg-type]

    def __len__(self) -> int:
        return int(self.cumulative_sizes[-1])

    def __getitem__(self, idx: int) -> Any:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if d == 0 else int(self.cumulative_sizes[d - 1])
        return self.datasets[d][idx - start]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``. Example: ``Subset(ds, range(100))``."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset, self.indices = dataset, indices

    def __getitem__(self, idx: Any) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[Any], generator: Generator | None = None) -> list[Subset]:
    """Split into non-overlapping random subsets of the given lengths (or fractions summing to 1, the
    remainder spread round-robin, as PyTorch). Example: ``train, val = random_split(ds, [0.9, 0.1])``."""
    n = len(dataset)  # type: ignore[arg-type]
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = _rng(generator).permutation(n).tolist()
    return [Subset(dataset, perm[end - k:end]) for k, end in zip(lengths, itertools.accumulate(lengths))]


class Sampler:
    """Yields dataset indices."""

    def __iter__(self) -> Iterator[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """``0, 1, ..., len - 1``."""

    def __init__(self, data_source: Any) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh permutation per epoch (or ``num_samples`` draws with ``replacement``)."""

    def __init__(self, data_source: Any, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        rng = _rng(self.generator)
        n = len(self.data_source)
        if self.replacement:
            return iter(rng.integers(0, n, self.num_samples).tolist())
        idx: list[Any] = []
        while len(idx) < self.num_samples:
            idx.extend(rng.permutation(n).tolist())
        return iter(idx[:self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in random order."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        perm = _rng(self.generator).permutation(len(self.indices))
        return iter([self.indices[i] for i in perm])

    def __len__(self) -> int:
        return len(self.indices)


def _num_batches(n: int, batch_size: int, drop_last: bool) -> int:
    return n // batch_size if drop_last else -(-n // batch_size)


def _batches(items: Iterable[Any], batch_size: int, drop_last: bool) -> Iterator[list[Any]]:
    """Lists of ``batch_size`` consecutive items (the last one short unless ``drop_last``)."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of ``batch_size`` (the last one short unless ``drop_last``)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[Any]]:  # type: ignore[override]  # batches of indices, as torch's
        return _batches(self.sampler, self.batch_size, self.drop_last)

    def __len__(self) -> int:
        return _num_batches(len(self.sampler), self.batch_size, self.drop_last)  # type: ignore[arg-type]


def default_collate(batch: list[Any]) -> Any:
    """Stack a list of samples: tensors and arrays stacked on a new first axis, numbers into a tensor
    (Python floats float64, ints int64, NumPy scalars their own dtype, as in PyTorch),
    tuples/lists/dicts collated field by field, strings left as a list.

    Example: ``default_collate([(x0, 0), (x1, 1)]) -> (stack([x0, x1]), tensor([0, 1]))``.
    """
    first = batch[0]
    if isinstance(first, Tensor):
        return stack(list(batch), 0)
    if isinstance(first, np.ndarray):
        return tensor(np.stack(batch))
    if isinstance(first, np.generic) and not isinstance(first, (np.str_, np.bytes_)):
        return tensor(np.array(batch))  # NumPy scalars keep their dtype (np.float32 -> float32), as in PyTorch
    if isinstance(first, float):
        return tensor(list(batch), dtype=float64)  # Python floats are float64 (PyTorch: not the default dtype)
    if isinstance(first, numbers.Number):  # ints (int64), bools (bool)
        return tensor(list(batch))
    if isinstance(first, (str, bytes)):
        return list(batch)
    if isinstance(first, dict):
        return {k: default_collate([b[k] for b in batch]) for k in first}
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(first, (tuple, list)):
        if any(len(b) != len(first) for b in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        cols = [default_collate(list(s)) for s in zip(*batch)]
        return tuple(cols) if isinstance(first, tuple) else cols
    raise TypeError(f"default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found "
                    f"{type(first).__name__}")


def get_worker_info() -> None:
    """Always None: loading happens in the main process."""
    return None


class DataLoader:
    """Iterate over a dataset in batches: ``batch_size``, ``shuffle`` (with a ``generator``), ``drop_last``,
    ``sampler`` / ``batch_sampler``, ``collate_fn`` (default :func:`default_collate`).

    Example::

        loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
        for xb, yb in loader:
            ...
    """

    def __init__(self, dataset: Any, batch_size: int | None = 1, shuffle: bool | None = None, sampler: Any = None,
                 batch_sampler: Any = None, num_workers: int = 0, collate_fn: Callable[..., Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[..., Any] | None = None, multiprocessing_context: Any = None,
                 generator: Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "", in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        self.dataset, self.num_workers, self.pin_memory, self.timeout = dataset, num_workers, pin_memory, timeout
        self.generator = generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None or batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler option")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last, self.sampler, self.batch_sampler = batch_size, drop_last, sampler, batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None else (lambda x: x))

    def __iter__(self) -> Iterator[Any]:
        samples: Iterable[Any]
        if self._iterable:
            samples = self.dataset if self.batch_size is None else _batches(self.dataset, self.batch_size,
                                                                            self.drop_last)
        elif self.batch_sampler is None:
            samples = (self.dataset[i] for i in self.sampler)
        else:
            samples = ([self.dataset[i] for i in idx] for idx in self.batch_sampler)
        for sample in samples:
            yield self.collate_fn(sample)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            return n if self.batch_size is None else _num_batches(n, self.batch_size, self.drop_last)
        return len(self.batch_sampler) if self.batch_sampler is not None else len(self.sampler)
