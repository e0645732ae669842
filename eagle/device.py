"""Device properties as a frozen dataclass."""
import dataclasses

from ._seam_ffi import ffi
from .errors import BackendLoadError


@dataclasses.dataclass(frozen=True)
class DeviceProps:
    """What a backend says about one of its devices (0 where the kind cannot know)."""
    device: int
    name: str
    cc_major: int
    cc_minor: int
    sm_count: int
    clock_rate_khz: int
    memory_clock_rate_khz: int
    memory_bus_width_bits: int
    regs_per_block: int
    regs_per_sm: int
    warp_size: int
    shared_mem_per_block: int
    shared_mem_per_sm: int
    peak_bytes_per_s: float
    peak_flops_sp: float
    peak_flops_dp: float
    fp64_ratio: float
    ridge_flops_per_byte_sp: float
    ridge_flops_per_byte_dp: float


def device_props(backend, device=0):
    props = ffi.new("struct eagle_backend_device_props*")
    size = ffi.sizeof(props[0])
    props.struct_size = size
    backend.call.device_props(int(device), props)
    written = int(props.struct_size)
    if written > size:
        raise BackendLoadError(f"eagle_backend_device_props: the backend wrote back struct_size {written}, "
                         f"more than the caller's {size}")
    values = {}
    for field, f in ffi.typeof(props[0]).fields:
        if field in ("struct_size", "reserved0"):
            continue
        v = getattr(props, field)
        if f.type.kind == "array":
            v = ffi.string(v).decode("utf-8", "replace")
        values[field] = v if f.offset + ffi.sizeof(f.type) <= written else type(v)()
    return DeviceProps(**values)
