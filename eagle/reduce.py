"""Reductions of a plane on its own device: the mean, variance and standard error a Monte-Carlo
run ends with, without copying the plane to the host.

One kernel, compiled once per (backend, device) by the kind's own compiler, runs ``M`` lanes;
each lane reduces its share of the plane to a partial ``(count, mean, M2)``, and only those
``3 M`` numbers come back to the host, where Chan, Golub and LeVeque's pairwise formula combines
them. ``M`` and the layout come from the device's properties, naming no kind: where a warp has
several lanes, lane ``l`` takes values ``l, l + M, l + 2M, ...`` (neighbouring lanes read
neighbouring values); where it has one, lane ``l`` takes one contiguous chunk."""
import math
import threading
from collections import namedtuple

import numpy as np

from . import exec as _exec
from . import memory as _memory
from . import module as _module
from ._arrays import address_of
from ._inflight import in_turn, submit
from ._resolve import resolve
from .errors import BackendUnavailable, EagleTypeError, EagleValueError

# Each lane: its values less its first value K, in groups of up to EAGLE_REDUCE_GROUP summed about
# the group's first value (no division), each group merged into the lane's running (count,
# mean - K, M2) with Chan et al.'s formula; M2 = sum (x - mean)^2. The shifts keep the digits a
# large common offset (1e9 + small noise) would take from the means and from the sum of squares.
_SOURCE = r"""
#include <eagle/kernel.h>

#define EAGLE_REDUCE_GROUP 64

/* (n, mean, m2) += the group (nb, mb, m2b): Chan, Golub & LeVeque's update. */
EAGLE_FN void eagle_reduce_merge(double* n, double* mean, double* m2, double nb, double mb, double m2b)
{
    const double nn = *n + nb, d = mb - *mean;
    *mean += d * (nb / nn);
    *m2 += m2b + d * d * (*n * (nb / nn));
    *n = nn;
}

/* Lane i of `lanes`: the values k = (j lanes + i) block + b (j = 0, 1, ...; b < block; k < size),
 * taken about the lane's first value K (so that a large common offset leaves the means' digits
 * alone); part gets (count, K, mean - K, M2) in four rows of `lanes`. The kernels are declared
 * below with EAGLE_KERNEL written out, so that eagle reads their parameters and checks every
 * launch (x is read only, any length; part is 4 x lanes). */
#define EAGLE_REDUCE_MEAN_VAR_BODY(T)                                                                \
    {                                                                                                \
        (void)n;                                                                                     \
        double cnt = 0.0, mean = 0.0, m2 = 0.0, shift = 0.0, s1 = 0.0, s2 = 0.0;                     \
        const double lane_shift = i * block < size ? (double)x[i * block] : 0.0;                    \
        int64_t g = 0;                                                                               \
        for (int64_t start = i * block; start < size; start += lanes * block) {                      \
            const int64_t end = size - start < block ? size : start + block;                        \
            for (int64_t k = start; k < end; ++k) {                                                  \
                const double v = (double)x[k] - lane_shift;                                          \
                if (g == 0) shift = v;                                                               \
                const double d = v - shift;                                                          \
                s1 += d;                                                                             \
                s2 += d * d;                                                                         \
                if (++g == EAGLE_REDUCE_GROUP) {                                                     \
                    const double gn = (double)g;                                                     \
                    eagle_reduce_merge(&cnt, &mean, &m2, gn, shift + s1 / gn, s2 - s1 * (s1 / gn));  \
                    g = 0; s1 = 0.0; s2 = 0.0;                                                       \
                }                                                                                    \
            }                                                                                        \
        }                                                                                            \
        if (g > 0) {                                                                                 \
            const double gn = (double)g;                                                             \
            eagle_reduce_merge(&cnt, &mean, &m2, gn, shift + s1 / gn, s2 - s1 * (s1 / gn));          \
        }                                                                                            \
        part[i] = cnt;                                                                               \
        part[lanes + i] = lane_shift;                                                                \
        part[2 * lanes + i] = mean;                                                                  \
        part[3 * lanes + i] = m2;                                                                    \
    }

EAGLE_KERNEL(eagle_reduce_mean_var_f64, (EAGLE_BUFFER const double*, x), (int64_t, size), (int64_t, lanes),
             (int64_t, block), (EAGLE_BUFFER double*, part))
EAGLE_REDUCE_MEAN_VAR_BODY(double)
EAGLE_KERNEL(eagle_reduce_mean_var_f32, (EAGLE_BUFFER const float*, x), (int64_t, size), (int64_t, lanes),
             (int64_t, block), (EAGLE_BUFFER double*, part))
EAGLE_REDUCE_MEAN_VAR_BODY(float)
"""
_KERNELS = {np.dtype(np.float64): "eagle_reduce_mean_var_f64", np.dtype(np.float32): "eagle_reduce_mean_var_f32"}
_modules = {}  # (library path, kind, device) -> Module
_lock = threading.Lock()

#: Lanes per multiprocessor-lane: M = sm_count * warp_size * this (at most the plane's size).
_LANES_PER_CORE_LANE = 16

MeanVar = namedtuple("MeanVar", ["mean", "var", "stderr", "n"])
MeanVar.__doc__ = """The mean of a plane's values, their sample variance (divisor n - 1), the
standard error of the mean sqrt(var / n), and n, the number of values."""


def _kernel(backend, device, dtype):
    key = (backend.path, backend.kind, device)
    with _lock:
        mod = _modules.get(key)
    if mod is None:
        mod = _module.compile(backend, _SOURCE, kernels=tuple(_KERNELS.values()), name="eagle_reduce.c",
                              device=device)
        with _lock:
            mod = _modules.setdefault(key, mod)
    return mod[_KERNELS[dtype]]


def _layout(backend, device, size):
    """(lanes, block): strided over many lanes where a warp has several, chunks where it has one."""
    try:
        props = backend.device_props(device)
        cores, warp = max(1, props.sm_count), max(1, props.warp_size)
    except BackendUnavailable:  # a backend without device properties: a GPU-like guess works everywhere
        cores, warp = 64, 32
    lanes = max(1, min(size, cores * warp * _LANES_PER_CORE_LANE))
    block = 1 if warp > 1 else -(-size // lanes)
    return lanes, block


def _combine(count, shift, mean, m2):
    """Chan et al.'s pairwise combination of the lanes' partials (numpy arrays: count, the lane's
    shift K, its mean less K, M2) to (count, mean, M2). The lanes' means are taken about the
    first lane's K, so that a large common offset costs no digits until the last addition.
    Infinities give NaN, as the lanes do (inf - inf), without numpy's warning."""
    keep = count > 0
    count, shift, mean, m2 = count[keep], shift[keep], mean[keep], m2[keep]
    with np.errstate(invalid="ignore", over="ignore"):
        base = shift[0]
        mean = (shift - base) + mean
        while count.size > 1:
            if count.size % 2:
                count, mean, m2 = (np.append(a, 0.0) for a in (count, mean, m2))
            na, nb = count[0::2], count[1::2]
            ma, mb = mean[0::2], mean[1::2]
            n = na + nb
            f = np.divide(nb, n, out=np.zeros_like(n), where=n > 0)
            d = mb - ma
            mean = np.where(nb > 0, ma + d * f, ma)
            m2 = np.where(nb > 0, m2[0::2] + m2[1::2] + d * d * (na * f), m2[0::2])
            count = n
        return float(count[0]), float(base + mean[0]), float(m2[0])


def mean_var(plane, *, stream=None, backend=None):
    """Mean, sample variance and standard error of the values of ``plane``, on its device.

    Parameters
    ----------
    plane : array
        Contiguous float64 or float32 values on any backend's device (numpy, an
        :class:`eagle.DeviceArray`, CuPy, torch, ... through DLPack); every value counts, whatever
        the shape. It is read, never copied to the host.
    stream : eagle.Stream, optional
        The stream to run on, after the work already enqueued there; the call waits for it (it
        returns host numbers). With no stream, eagle's own stream. Other stream objects are
        refused: eagle can wait only for its own streams (order one after a foreign stream with
        :func:`eagle.fence`).
    backend : kind, 'gpu', path or Backend, optional
        Overrides where the plane says it lives.

    Returns
    -------
    MeanVar
        ``(mean, var, stderr, n)`` as Python numbers: ``var`` with divisor ``n - 1`` (NaN when
        ``n == 1``), ``stderr = sqrt(var / n)``. A NaN or an infinity in the plane makes
        mean, var and stderr NaN.

    Raises
    ------
    eagle.EagleValueError
        The plane holds no value.
    eagle.EagleTypeError
        The plane is not float64 or float32, is no array, or ``stream`` is not an eagle Stream.

    Each lane sums groups of its values about the group's first value and merges them with Chan
    et al.'s formula; the host merges the lanes the same way. The result agrees with numpy's
    ``mean`` and ``var(ddof=1)`` to about ``1e-15`` relative, also for values like
    ``1e9 + noise`` whose naive sum of squares cancels.
    """
    what = "eagle.mean_var"
    if stream is not None and not callable(getattr(stream, "synchronize", None)):
        raise EagleTypeError(f"{what}: stream must be an eagle Stream (Backend.stream()) or None, not a "
                             f"{type(stream).__name__}: the call waits for its stream, which eagle can do only "
                             "for its own; order it after a foreign stream with eagle.fence")
    raw_dtype = getattr(plane, "dtype", None)
    if raw_dtype is None:
        raise EagleTypeError(f"{what}: the plane must be an array of float64 or float32 values, got a "
                             f"{type(plane).__name__}")
    try:
        dtype = np.dtype(str(raw_dtype).split(".")[-1])  # numpy's, or torch.float64's name
    except TypeError:
        dtype = None
    if dtype not in _KERNELS:
        raise EagleTypeError(f"{what}: the plane holds {raw_dtype}; only float64 and float32 planes are "
                             "reduced (convert it first)")
    if isinstance(plane, (np.ndarray, np.generic)) and np.ndim(plane) == 0:
        plane = np.asarray(plane).reshape(1)  # one value (mean_var(x[0]) passes a numpy scalar)
    b, device = resolve([plane], backend=backend, streams=(stream,), what=what)
    info = address_of(plane)
    size = info.nbytes // dtype.itemsize
    if size == 0:
        raise EagleValueError(f"{what}: the plane is empty (shape {tuple(getattr(plane, 'shape', ()))}); "
                              "a mean needs at least one value")
    device = 0 if device is None else device
    kernel = _kernel(b, device, dtype)
    lanes, block = _layout(b, device, size)
    part = b.empty(4 * lanes, device=device)
    host = np.empty((4, lanes))
    # the partials and their copy to the host, under the one stream= policy (no stream: on eagle's
    # own, waited for); the result is read on the host, so a given stream is waited for too
    submit(b, stream, in_turn, (_exec.enqueue_run, (kernel, [plane, size, lanes, block, part], lanes), {}),
           (_memory.enqueue_copy, (host, part), {}))
    if stream is not None:
        stream.synchronize()
    n, mean, m2 = _combine(*host)
    var = m2 / (n - 1) if n > 1 else math.nan
    return MeanVar(mean, var, math.sqrt(var / n) if n > 1 else math.nan, int(n))


__all__ = ["MeanVar", "mean_var"]
