"""``ft.nn.utils.rnn``: padding and packing variable-length sequences (PyTorch's ``torch.nn.utils.rnn``).

Everything is composed of recorded Tensor ops (slicing, ``cat``, ``stack``, ``index_select``, ``F.pad``), so
gradients flow from a packed or padded result back to the sequences. Lengths and ``batch_sizes`` are
host data (int64 CPU tensors), as in PyTorch.

Example::

    from funcgrad.tensor.nn.utils.rnn import pad_sequence, pack_padded_sequence, pad_packed_sequence
    seqs = [ft.ones(3, 2), ft.ones(1, 2)]
    padded = pad_sequence(seqs, batch_first=True)              # (2, 3, 2)
    packed = pack_padded_sequence(padded, [3, 1], batch_first=True)
    again, lengths = pad_packed_sequence(packed, batch_first=True)
"""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from ...creation import full, tensor
from ...dtypes import int64
from ...ops import cat, stack
from ...tensor import Tensor
from .. import functional as F

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence", "invert_permutation"]


def _host_ints(values: Any) -> np.ndarray:
    """Lengths or indices as a host int64 array (from a Tensor, a list or an array)."""
    if isinstance(values, Tensor):
        return np.asarray(values.tolist(), dtype=np.int64).reshape(-1)
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _cpu_long(values: np.ndarray) -> Tensor:
    return tensor(np.ascontiguousarray(values, dtype=np.int64), dtype=int64)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of ``range(n)`` (None stays None), on the permutation's device.

    Example: ``invert_permutation(ft.tensor([2, 0, 1]))`` is ``tensor([1, 2, 0])``.
    """
    if permutation is None:
        return None
    p = _host_ints(permutation)
    inverse = np.empty_like(p)
    inverse[p] = np.arange(p.size, dtype=np.int64)
    return tensor(inverse, dtype=int64, device=permutation.device)


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """A batch of variable-length sequences packed time step by time step (what ``pack_padded_sequence`` returns).

    ``data`` holds step 0 of every sequence, then step 1 of those still running, ...; ``batch_sizes``
    (int64, CPU) says how many sequences each step holds. ``sorted_indices`` maps the packed order to
    the original batch order (None when the batch was already sorted by decreasing length).

    Example::

        packed = pack_sequence([ft.tensor([1., 2., 3.]), ft.tensor([4.])])
        packed.data, packed.batch_sizes          # tensor([1., 4., 2., 3.]), tensor([2, 1, 1])
    """

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PyTorch's legacy form PackedSequence((data, batch_sizes))
            if not isinstance(data, (list, tuple)) or len(data) != 2:
                raise TypeError("PackedSequence expects data and batch_sizes, or a (data, batch_sizes) pair")
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor) or batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn. "
                             "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def _with_data(self, data: Tensor) -> "PackedSequence":
        """The same packing over new ``data``; the indices follow the data's device."""
        if data is self.data:
            return self
        def move(indices: Tensor | None) -> Tensor | None:
            return None if indices is None else indices.to(device=data.device)

        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def to(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        """``data.to(...)``; the indices move with the data, ``batch_sizes`` stays on the CPU."""
        return self._with_data(self.data.to(*args, **kwargs))

    def cpu(self) -> "PackedSequence":
        return self._with_data(self.data.cpu())

    def cuda(self, *args: Any, **kwargs: Any) -> "PackedSequence":
        return self._with_data(self.data.cuda(*args, **kwargs))

    def double(self) -> "PackedSequence":
        return self._with_data(self.data.double())

    def float(self) -> "PackedSequence":
        return self._with_data(self.data.float())

    def half(self) -> "PackedSequence":
        return self._with_data(self.data.half())

    def long(self) -> "PackedSequence":
        return self._with_data(self.data.long())

    def int(self) -> "PackedSequence":
        return self._with_data(self.data.int())

    def short(self) -> "PackedSequence":
        return self._with_data(self.data.short())

    def char(self) -> "PackedSequence":
        return self._with_data(self.data.char())

    def byte(self) -> "PackedSequence":
        return self._with_data(self.data.byte())

    @property
    def is_cuda(self) -> bool:
        return bool(self.data.is_cuda)


def pad_sequence(sequences: Any, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of shape ``(L_i, *)`` into ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``), ``T = max L_i``,
    filling with ``padding_value`` on the ``padding_side`` ("right" or "left").

    Example: ``pad_sequence([ft.ones(2), ft.ones(1)], batch_first=True)`` is ``[[1, 1], [1, 0]]``.
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(seqs[0].shape[1:])
    for s in seqs:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: every sequence must have the trailing shape {trailing} of the "
                               f"first, but one has shape {tuple(s.shape)}")
    longest = max(int(s.shape[0]) for s in seqs)
    keep_trailing = (0, 0) * len(trailing)  # F.pad's widths run from the last dimension to the first
    rows = []
    for s in seqs:
        missing = longest - int(s.shape[0])
        widths = (0, missing) if padding_side == "right" else (missing, 0)
        rows.append(F.pad(s, keep_trailing + widths, value=padding_value) if missing else s)
    return stack(rows, dim=0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths: Any, batch_first: bool = False) -> list[Tensor]:
    """The inverse of :func:`pad_sequence`: the list of ``padded[:L_i]`` per batch entry.

    Example: ``unpad_sequence(pad_sequence(seqs), ft.tensor([len(s) for s in seqs]))`` gives ``seqs`` back.
    """
    batch = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [batch[i, :n] for i, n in enumerate(_host_ints(lengths).tolist())]


def _pack_sorted(input: Tensor, lengths: np.ndarray) -> tuple[Tensor, Tensor]:
    """``(data, batch_sizes)`` of a time-major ``(T, B, *)`` batch whose lengths decrease."""
    steps, batch = int(input.shape[0]), int(input.shape[1])
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if lengths.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lengths.size} "
                           f"(batch_size={batch})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if np.any(lengths[1:] > lengths[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
                           "this requirement if you do not need ONNX exportability.")
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a length of {int(lengths[0])} exceeds the {steps} time steps "
                           f"of the input")
    batch_sizes = (lengths[None, :] > np.arange(int(lengths[0]))[:, None]).sum(axis=1)
    # step t holds the first batch_sizes[t] sequences: rows t * batch + b of the flattened input, in one gather
    rows = np.nonzero(np.arange(batch)[None, :] < batch_sizes[:, None])
    flat = input.reshape(steps * batch, *input.shape[2:])
    return flat[_index_on(rows[0] * batch + rows[1], input)], _cpu_long(batch_sizes.astype(np.int64))


def _index_on(index: np.ndarray, like: Tensor) -> Tensor:
    """A host index array as an int64 tensor on ``like``'s device (a gather then stays there)."""
    return tensor(index.astype(np.int64), dtype=int64, device=like.device)


def pack_padded_sequence(input: Tensor, lengths: Any, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of sequences of the given lengths.

    With ``enforce_sorted`` the lengths must decrease; otherwise the batch is sorted first and the
    permutation kept in the result. Example: ``pack_padded_sequence(x, [3, 1], batch_first=True)``.
    """
    host_lengths = _host_ints(lengths)
    sorted_indices = None
    if not enforce_sorted:
        order = np.argsort(-host_lengths, kind="stable")
        host_lengths = host_lengths[order]
        sorted_indices = tensor(order.astype(np.int64), dtype=int64, device=input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    time_major = input.transpose(0, 1) if batch_first else input
    data, batch_sizes = _pack_sorted(time_major, host_lengths)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of :func:`pack_padded_sequence`: ``(padded, lengths)``, ``lengths`` an int64 CPU tensor in the
    original batch order; ``total_length`` pads the time axis to that length.

    Example: ``padded, lengths = pad_packed_sequence(packed, batch_first=True)``.
    """
    batch_sizes = _host_ints(sequence.batch_sizes)
    steps = int(batch_sizes.size)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
    else:
        total_length = steps
    data = sequence.data
    batch = int(batch_sizes[0]) if steps else 0
    trailing = tuple(data.shape[1:])
    # every padded position (t, b) reads one row of the data and the padding one more row: one gather
    pad_row = int(data.shape[0])
    index = np.full((total_length, batch), pad_row, dtype=np.int64)
    starts = np.cumsum(batch_sizes) - batch_sizes
    valid = np.arange(batch)[None, :] < batch_sizes[:, None]
    index[:steps][valid] = (starts[:, None] + np.arange(batch)[None, :])[valid]
    rows = cat([data, full((1, *trailing), padding_value, dtype=data.dtype, device=data.device)])
    padded = rows[_index_on(index, data)]
    host_lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1).astype(np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        host_lengths = host_lengths[_host_ints(sequence.unsorted_indices)]
    return (padded.transpose(0, 1) if batch_first else padded), _cpu_long(host_lengths)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of sequences ``(L_i, *)`` (``pad_sequence`` then ``pack_padded_sequence``).

    Example: ``pack_sequence([ft.ones(3), ft.ones(2)])``.
    """
    lengths = np.asarray([int(s.shape[0]) for s in sequences], dtype=np.int64)
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The inverse of :func:`pack_sequence`: the list of sequences, in the original order.

    Example: ``unpack_sequence(pack_sequence(seqs, enforce_sorted=False))`` gives ``seqs`` back.
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
