"""Checks of the ``device`` group: device_props is sane and honours the output-struct rule."""
from ..._seam_ffi import ffi
from .._registry import CheckFailure
from ._helpers import bcheck, output_struct


@bcheck("device.props_sane")
def device_props_sane(s):
    """device_props(0) describes device 0 with non-negative figures (0 where the kind cannot know
    them; on the cpu kind its cores and warp_size 1) and a consistent fp64 ratio; an absent
    device is INDEX."""
    s.need_device()
    p = ffi.new("struct eagle_backend_device_props*")
    p.struct_size = ffi.sizeof(p[0])
    s.ok("device_props", 0, p)
    name = ffi.string(p.name).decode("utf-8", "replace")
    problems = []
    if p.device != 0:
        problems.append(f"device = {p.device}")
    # "Figures the kind cannot know are 0": only the cpu kind's are stated ("CPU cores on the cpu
    # kind", "1 on the cpu kind"); for any kind a figure is never negative (below).
    if s.kind == "cpu" and p.sm_count < 1:
        problems.append(f"sm_count = {p.sm_count} (CPU cores on the cpu kind)")
    if s.kind == "cpu" and p.warp_size != 1:
        problems.append(f"warp_size = {p.warp_size} (1 on the cpu kind)")
    for f in ("sm_count", "warp_size"):
        if getattr(p, f) < 0:
            problems.append(f"{f} = {getattr(p, f)}")
    for f in ("cc_major", "cc_minor", "clock_rate_khz", "memory_clock_rate_khz", "memory_bus_width_bits",
              "regs_per_block", "regs_per_sm", "shared_mem_per_block", "shared_mem_per_sm",
              "peak_bytes_per_s", "peak_flops_sp", "peak_flops_dp", "fp64_ratio",
              "ridge_flops_per_byte_sp", "ridge_flops_per_byte_dp"):
        v = getattr(p, f)
        if not (v >= 0) or v != v:
            problems.append(f"{f} = {v}")
    if p.peak_flops_sp > 0 and p.peak_flops_dp > 0 and p.fp64_ratio > 0:
        ratio = p.peak_flops_dp / p.peak_flops_sp
        if abs(ratio - p.fp64_ratio) > 1e-3 * max(ratio, 1e-9) + 1e-6:
            problems.append(f"fp64_ratio {p.fp64_ratio} != peak_flops_dp/peak_flops_sp {ratio:.6g}")
    if problems:
        raise CheckFailure("device_props(0): " + ", ".join(problems))
    s.expect("device_props", "INDEX", 1 << 20, p, why="device 1048576")
    return f"{name or '(no name)'}: {p.sm_count} SMs/cores, warp {p.warp_size}"


@bcheck("device.props_struct_size")
def device_props_struct_size(s):
    """device_props honours a short caller struct_size and a long one (output struct rules)."""
    s.need_device()
    return output_struct(s, "device_props", "eagle_backend_device_props",
                         lambda p: s.raw("device_props", 0, p), [4, 8, 100, 300])
