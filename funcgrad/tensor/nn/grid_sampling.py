"""Spatial transformers: ``affine_grid`` (the sampling grid of an affine map) and ``grid_sample``
(bilinear or nearest sampling of an image at those points, with zeros / border / reflection padding),
with PyTorch's ``align_corners`` conventions. Both are compositions of recorded Tensor operations, so
gradients flow to the image, to the grid and on to ``theta``.

Example::

    grid = F.affine_grid(theta, (N, C, H, W), align_corners=False)   # theta: (N, 2, 3)
    warped = F.grid_sample(x, grid, align_corners=False)
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from funcgrad.backend import namespace_of

from ..tensor import Tensor
from ..tensor_helpers import _as_tensor
from .bridge import _like

__all__ = ["affine_grid", "grid_sample"]


def _align_default(align_corners: bool | None, name: str) -> bool:
    if align_corners is None:
        warnings.warn(f"Default {name} behavior has changed to align_corners=False since 1.3.0. Please specify "
                      f"align_corners=True if the old behavior is desired. See the documentation of {name} for "
                      f"details.", UserWarning, stacklevel=3)
        return False
    return bool(align_corners)


def _base_coords(n: int, align_corners: bool) -> np.ndarray:
    """The normalized [-1, 1] coordinates of ``n`` pixel centres (corners with ``align_corners``)."""
    if n <= 1:
        return np.zeros(n)
    c = np.linspace(-1.0, 1.0, n)
    return c if align_corners else c * (n - 1) / n


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The ``(N, H, W, 2)`` (or ``(N, D, H, W, 3)``) grid of ``theta @ [x, y, (z,) 1]`` over the output's
    normalized pixel coordinates, for ``grid_sample``. ``theta`` is ``(N, 2, 3)`` for a 4-d ``size``,
    ``(N, 3, 4)`` for a 5-d one.

    Example: ``F.affine_grid(ft.eye(2, 3).unsqueeze(0), (1, 1, 4, 4), align_corners=False)`` is the identity grid.
    """
    align = _align_default(align_corners, "affine_grid")
    size = tuple(int(s) for s in size)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. Got "
                             f"{list(theta.shape)}.")
        spatial = size[2:]
    elif len(size) == 5:
        if theta.dim() != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. Got "
                             f"{list(theta.shape)}.")
        spatial = size[2:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if int(theta.shape[0]) != size[0]:
        raise ValueError(f"Expected theta of batch size {size[0]} for size {size}, got {list(theta.shape)}.")
    if min(spatial) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # the coordinates in x, y(, z) order: the last spatial axis is x
    axes = [_base_coords(n, align) for n in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack(list(reversed(mesh)) + [np.ones(spatial)], axis=-1).reshape(-1, len(spatial) + 1)
    grid = _like(theta, base.astype(theta._value.dtype)).matmul(theta.transpose(1, 2))  # (N, prod, nsp)
    return grid.reshape((size[0],) + spatial + (len(spatial),))


def _reflect(c: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect coordinates into ``[twice_low / 2, twice_high / 2]`` (as often as needed)."""
    if twice_low == twice_high:
        return c * 0.0
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    c = (c - lo).abs()
    extra = c.fmod(span)
    flips = (c.detach() / span).floor()._value  # on the tensor's device
    even = Tensor._make(flips % 2 == 0)
    return (extra + lo).where(even, span - extra + lo)


def _source(coord: Tensor, n: int, align: bool, padding_mode: str) -> Tensor:
    """Normalized grid coordinates -> pixel coordinates along an axis of ``n`` pixels, padded."""
    c = (coord + 1.0) / 2.0 * (n - 1) if align else ((coord + 1.0) * n - 1.0) / 2.0
    if padding_mode == "border":
        c = c.clamp(0, n - 1)
    elif padding_mode == "reflection":
        c = _reflect(c, 0, 2 * (n - 1)) if align else _reflect(c, -1, 2 * n - 1)
        c = c.clamp(0, n - 1)
    return c


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",  # noqa: A002
                align_corners: bool | None = None) -> Tensor:
    """Sample ``input (N, C, H, W)`` at ``grid (N, H_out, W_out, 2)`` (x, y in [-1, 1]) -> ``(N, C, H_out, W_out)``.

    ``mode``: ``"bilinear"`` or ``"nearest"``; ``padding_mode``: ``"zeros"``, ``"border"`` or ``"reflection"``.
    Differentiable in ``input`` and (bilinear) in ``grid``.

    Example: ``F.grid_sample(x, F.affine_grid(theta, x.shape, align_corners=False), align_corners=False)``.
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align = _align_default(align_corners, "grid_sample")
    grid = _as_tensor(grid)
    if input.dim() == 5:
        raise NotImplementedError("grid_sample: 5-d (volumetric) inputs are not supported yet; expected a 4-d "
                                  "input (N, C, H, W)")
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not supported yet; use 'bilinear' or 'nearest'")
    if input.dim() != 4 or grid.dim() != 4:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    N, C, H, W = (int(s) for s in input.shape)
    if int(grid.shape[0]) != N or int(grid.shape[-1]) != 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size 2 in last dimension and the same batch "
                           f"size as input, but got grid with sizes {list(grid.shape)}")
    Ho, Wo = int(grid.shape[1]), int(grid.shape[2])
    ix = _source(grid[..., 0], W, align, padding_mode)  # (N, Ho, Wo)
    iy = _source(grid[..., 1], H, align, padding_mode)
    flat = input.reshape(N, C, H * W)
    xp = namespace_of(input._value)

    def tap(yi: Any, xi: Any) -> Tensor:
        """``input[n, :, yi, xi]`` as ``(N, C, Ho, Wo)`` for integer arrays on the input's device, 0 outside."""
        inside = (yi >= 0) & (yi < H) & (xi >= 0) & (xi < W)
        idx = xp.where(inside, xp.clip(yi, 0, H - 1) * W + xp.clip(xi, 0, W - 1), 0).reshape(N, 1, Ho * Wo)
        vals = flat.gather(2, Tensor._make(xp.broadcast_to(idx, (N, C, Ho * Wo)).copy()))
        return vals.reshape(N, C, Ho, Wo) * Tensor._make(inside.reshape(N, 1, Ho, Wo).astype(input._value.dtype))

    if mode == "nearest":  # round half to even, as PyTorch's nearbyint
        return tap(iy.detach().round()._value.astype(xp.int64), ix.detach().round()._value.astype(xp.int64))
    x0t, y0t = ix.detach().floor(), iy.detach().floor()
    x0, y0 = x0t._value.astype(xp.int64), y0t._value.astype(xp.int64)
    fx = (ix - x0t).unsqueeze(1)
    fy = (iy - y0t).unsqueeze(1)
    return (tap(y0, x0) * (1 - fx) * (1 - fy) + tap(y0, x0 + 1) * fx * (1 - fy)
            + tap(y0 + 1, x0) * (1 - fx) * fy + tap(y0 + 1, x0 + 1) * fx * fy)
