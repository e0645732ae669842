"""Node by node: eagle's ActiveSet loop (bench_cuda section 2b) against the hand-built raw WHILE.

    python3 benchmarks/diag/aset_body_diff.py [--logn 20] [--kinds 0,2,3,4] [--dot DIR]

Records ``repeat_while([step, aset], aset)`` exactly as benchmarks/bench_cuda.py section 2b does
(the step is peers.cu's peer_drop_step launched by eagle over n lanes, block 256) and builds the
raw peer graphs of peers.cu (peer_activeset_graph, body_kind as in peer_activeset_while). For
eagle's top-level graph and WHILE body and for each peer's, it prints every node (type; for
kernel nodes the function, grid, block, dynamic shared memory, the function's registers and
binary version, the kernel node attributes, the arguments decoded where the kernel is known) and
every edge (type, ports), side by side, then the differences. The conditional node's own
parameters cannot be read back through the driver API; the verbose DOT files
(cuGraphDebugDotPrint, written to --dot, default $OUT/aset_dot or /tmp/aset_dot) hold them, and
their address-free diff is printed too. Last, one launch of eagle's graph and of each peer kind
checks that they iterate alike (a correctness smoke, not the benchmark).

Everything goes through the driver API by ctypes on libcuda.so.1; a failing call prints what
failed and the rest goes on."""
import argparse
import ctypes
import difflib
import faulthandler
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # benchmarks/: bench_cuda.build_peers

c_void_p, c_uint, c_int, c_size_t = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_size_t

NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty", 6: "wait_event",
              7: "event_record", 8: "ext_semas_signal", 9: "ext_semas_wait", 10: "mem_alloc", 11: "mem_free",
              12: "batch_mem_op", 13: "conditional"}
EDGE_TYPES = {0: "default", 1: "programmatic"}
PORTS = {0: "default", 1: "programmatic", 2: "launch_order"}
# CUfunction_attribute: what tells two builds of one kernel apart
FUNC_ATTRS = (("regs", 4), ("static_smem", 1), ("local", 3), ("binary_version", 6), ("ptx_version", 5),
              ("max_threads", 0), ("cache_mode_ca", 7), ("max_dyn_smem", 8), ("smem_carveout", 9))
# CUlaunchAttributeID values a kernel node may carry (cuda.h); several are "valid for launches"
# only and are refused for nodes (printed as "-").
NODE_ATTRS = (("access_policy_window", 1), ("cooperative", 2), ("cluster_dim", 4), ("cluster_sched_policy", 5),
              ("programmatic_stream_serialization", 6), ("programmatic_event", 7), ("priority", 8),
              ("mem_sync_domain_map", 9), ("mem_sync_domain", 10), ("preferred_cluster_dim", 11),
              ("launch_completion_event", 12), ("device_updatable", 13), ("preferred_smem_carveout", 14))


READ_ARGS = True  # --no-args clears it
ALL_KINDS = range(8)  # peers.cu's peer_activeset_while body kinds


class DiagError(Exception):
    pass


class KernelNodeParams(ctypes.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", c_void_p), ("gridDimX", c_uint), ("gridDimY", c_uint), ("gridDimZ", c_uint),
                ("blockDimX", c_uint), ("blockDimY", c_uint), ("blockDimZ", c_uint), ("sharedMemBytes", c_uint),
                ("kernelParams", c_void_p), ("extra", c_void_p), ("kern", c_void_p), ("ctx", c_void_p)]


class EdgeData(ctypes.Structure):  # CUgraphEdgeData
    _fields_ = [("from_port", ctypes.c_ubyte), ("to_port", ctypes.c_ubyte), ("type", ctypes.c_ubyte),
                ("reserved", ctypes.c_ubyte * 5)]


class CompactArgs(ctypes.Structure):  # backends/gpu/filtering_kernels.cuh
    _fields_ = [("mask", c_void_p), ("out", c_void_p), ("n", ctypes.c_uint32), ("flip", ctypes.c_uint32),
                ("ticket", c_void_p), ("status", c_void_p), ("total", c_void_p), ("live32", c_void_p),
                ("span", c_void_p), ("fire", c_void_p), ("theta", ctypes.c_float), ("tiles", ctypes.c_uint32),
                ("loop_handle", ctypes.c_uint64), ("loop_cell", c_void_p), ("loop_set", ctypes.c_uint32)]


class Driver:
    """The driver entry points this script uses, by cuGetProcAddress at the CUDA version whose
    signature is written here (so a CUDA 12 or 13 driver gives the same ABI)."""

    SIGS = {  # name: (cuda version of the signature, argtypes)
        "cuGetErrorName": (6000, [c_int, ctypes.POINTER(ctypes.c_char_p)]),
        "cuGraphGetNodes": (10000, [c_void_p, c_void_p, ctypes.POINTER(c_size_t)]),
        "cuGraphGetEdges": (12030, [c_void_p, c_void_p, c_void_p, c_void_p, ctypes.POINTER(c_size_t)]),
        "cuGraphNodeGetType": (10000, [c_void_p, ctypes.POINTER(c_int)]),
        "cuGraphKernelNodeGetParams": (12000, [c_void_p, ctypes.POINTER(KernelNodeParams)]),
        "cuGraphKernelNodeGetAttribute": (11000, [c_void_p, c_int, c_void_p]),
        "cuFuncGetName": (12030, [ctypes.POINTER(ctypes.c_char_p), c_void_p]),
        "cuKernelGetName": (12030, [ctypes.POINTER(ctypes.c_char_p), c_void_p]),
        "cuKernelGetFunction": (12000, [ctypes.POINTER(c_void_p), c_void_p]),
        "cuFuncGetAttribute": (2020, [ctypes.POINTER(c_int), c_int, c_void_p]),
        "cuFuncGetParamInfo": (12040, [c_void_p, c_size_t, ctypes.POINTER(c_size_t), ctypes.POINTER(c_size_t)]),
        "cuStreamGetCaptureInfo": (12030, [c_void_p, ctypes.POINTER(c_int), ctypes.POINTER(ctypes.c_uint64),
                                           ctypes.POINTER(c_void_p), c_void_p, c_void_p, ctypes.POINTER(c_size_t)]),
        "cuGraphDebugDotPrint": (11030, [c_void_p, ctypes.c_char_p, c_uint]),
    }

    # where the plain name's symbol has an older ABI than SIGS gives
    SYMBOLS = {"cuGraphGetEdges": "cuGraphGetEdges_v2", "cuStreamGetCaptureInfo": "cuStreamGetCaptureInfo_v3",
               "cuGraphKernelNodeGetParams": "cuGraphKernelNodeGetParams_v2"}

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise DiagError(f"libcuda.so.1 could not be loaded: {e}") from None
        self.fns = {}
        gpa = getattr(self.lib, "cuGetProcAddress_v2", None)
        if gpa is not None:
            gpa.restype = c_int
            gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(c_void_p), c_int, ctypes.c_uint64, ctypes.POINTER(c_int)]
        for name, (version, argtypes) in self.SIGS.items():
            fn = None
            if gpa is not None:
                p, status = c_void_p(), c_int(0)
                if gpa(name.encode(), ctypes.byref(p), version, 0, ctypes.byref(status)) == 0 and p.value:
                    fn = ctypes.CFUNCTYPE(c_int, *argtypes)(p.value)
            if fn is None:  # no cuGetProcAddress_v2: the exported symbol of the ABI written here
                fn = getattr(self.lib, self.SYMBOLS.get(name, name), None)
                if fn is not None:
                    fn.restype, fn.argtypes = c_int, argtypes
            self.fns[name] = fn

    def has(self, name):
        return self.fns.get(name) is not None

    def call(self, name, *args):
        """Calls `name`; raises DiagError naming the call and the CUresult on failure."""
        fn = self.fns.get(name)
        if fn is None:
            raise DiagError(f"{name}: not provided by this driver")
        rc = fn(*args)
        if rc:
            raise DiagError(f"{name}: {self.error_name(rc)}")
        return rc

    def try_call(self, name, *args):
        """Calls `name`; returns its CUresult (-1 when the driver lacks it), raises nothing."""
        fn = self.fns.get(name)
        return -1 if fn is None else fn(*args)

    def error_name(self, rc):
        s = ctypes.c_char_p()
        if self.has("cuGetErrorName") and self.fns["cuGetErrorName"](rc, ctypes.byref(s)) == 0 and s.value:
            return f"{s.value.decode()} ({rc})"
        return f"CUresult {rc}"

    def capture_graph(self, stream):
        """The graph the stream `stream` (an int) is capturing into."""
        status, g, n = c_int(0), c_void_p(), c_size_t(0)
        self.call("cuStreamGetCaptureInfo", c_void_p(stream), ctypes.byref(status), None, ctypes.byref(g), None,
                  None, ctypes.byref(n))
        if status.value != 1 or not g.value:
            raise DiagError(f"stream {stream:#x} is not capturing (status {status.value})")
        return g.value


# -- reading a graph --------------------------------------------------------------------------
def short_name(name):
    """compact_kernel<256, 16> for the mangled template name, else the name."""
    m = re.search(r"compact_kernelILi(\d+)ELi(\d+)E", name or "")
    if m:
        return f"compact_kernel<{m.group(1)},{m.group(2)}>"
    m = re.search(r"while_(entry|body)_setter", name or "")
    return f"eagle::{m.group(0)}" if m and not name.startswith("peer") else name


def node_attrs(drv, node):
    out = {}
    for label, attr in NODE_ATTRS:
        v = (ctypes.c_ubyte * 64)()
        rc = drv.try_call("cuGraphKernelNodeGetAttribute", c_void_p(node), attr, ctypes.byref(v))
        if rc:
            out[label] = "-"
            continue
        raw = bytes(v)
        i32 = lambda k: int.from_bytes(raw[4 * k:4 * k + 4], "little", signed=True)  # noqa: E731
        event = "set" if int.from_bytes(raw[:8], "little") else "none"
        if attr == 1:
            hit = ctypes.c_float.from_buffer_copy(raw[16:20]).value
            out[label] = f"bytes={int.from_bytes(raw[8:16], 'little')} hit={hit:g}"
        elif attr in (4, 11):
            out[label] = f"{i32(0)}x{i32(1)}x{i32(2)}"
        elif attr == 7:
            out[label] = f"event={event} flags={i32(2)} at_start={i32(3)}"
        elif attr == 12:
            out[label] = f"event={event} flags={i32(2)}"
        elif attr == 9:
            out[label] = f"default={raw[0]} remote={raw[1]}"
        elif attr == 13:
            out[label] = f"{i32(0)}"
        else:
            out[label] = f"{i32(0)}"
    return out


def kernel_args(drv, func, kparams):
    """[(size, bytes)] of the node's arguments (cuFuncGetParamInfo), or a string saying why not."""
    if not kparams:
        return "kernelParams is NULL (arguments in `extra`)"
    if not drv.has("cuFuncGetParamInfo"):
        return "cuFuncGetParamInfo needs a CUDA 12.4 driver"
    ptrs = ctypes.cast(c_void_p(kparams), ctypes.POINTER(c_void_p))
    out = []
    for i in range(64):
        off, size = c_size_t(0), c_size_t(0)
        if drv.try_call("cuFuncGetParamInfo", c_void_p(func), i, ctypes.byref(off), ctypes.byref(size)):
            break
        p = ptrs[i]
        if not p:
            return f"kernelParams[{i}] is NULL"
        out.append((size.value, ctypes.string_at(p, size.value)))
    return out


def decode_args(name, args):
    """The arguments as comparable words: pointers as ptr/NULL, values as numbers."""
    if isinstance(args, str):
        return [args]
    if "compact_kernel" in (name or "") and len(args) == 1 and args[0][0] == ctypes.sizeof(CompactArgs):
        a = CompactArgs.from_buffer_copy(args[0][1])
        ptr = lambda v: "ptr" if v else "NULL"  # noqa: E731
        return [f"mask={ptr(a.mask)}", f"out={ptr(a.out)}", f"n={a.n}", f"flip={a.flip:#x}",
                f"ticket={ptr(a.ticket)}", f"status={ptr(a.status)}", f"total={ptr(a.total)}",
                f"live32={ptr(a.live32)}", f"span={ptr(a.span)}", f"fire={ptr(a.fire)}", f"theta={a.theta:g}",
                f"tiles={a.tiles}", f"loop_handle={'set' if a.loop_handle else '0'}",
                f"loop_cell={ptr(a.loop_cell)}", f"loop_set={a.loop_set}"]
    words = []
    for k, (size, raw) in enumerate(args):
        v = int.from_bytes(raw, "little")
        if size == 8 and v >= 1 << 32:
            words.append(f"a{k}=ptr")
        elif size <= 8:
            words.append(f"a{k}={v}" if v or size != 8 else f"a{k}=0/NULL")
        else:
            words.append(f"a{k}=<{size} bytes>")
    return words


def read_graph(drv, graph):
    """{'nodes': [dict per node in topological order], 'edges': [(i, j, type, from_port, to_port)]}."""
    n = c_size_t(0)
    drv.call("cuGraphGetNodes", c_void_p(graph), None, ctypes.byref(n))
    arr = (c_void_p * max(n.value, 1))()
    drv.call("cuGraphGetNodes", c_void_p(graph), arr, ctypes.byref(n))
    handles = [arr[i] for i in range(n.value)]
    e = c_size_t(0)
    drv.call("cuGraphGetEdges", c_void_p(graph), None, None, None, ctypes.byref(e))
    frm, to = (c_void_p * max(e.value, 1))(), (c_void_p * max(e.value, 1))()
    data = (EdgeData * max(e.value, 1))()
    drv.call("cuGraphGetEdges", c_void_p(graph), frm, to, data, ctypes.byref(e))
    raw_edges = [(frm[i], to[i], data[i].type, data[i].from_port, data[i].to_port) for i in range(e.value)]
    # topological order, ties in the driver's node order (creation order)
    indeg = {h: 0 for h in handles}
    for _, b, *_ in raw_edges:
        indeg[b] += 1
    order, ready = [], [h for h in handles if indeg[h] == 0]
    while ready:
        h = ready.pop(0)
        order.append(h)
        for a, b, *_ in raw_edges:
            if a == h:
                indeg[b] -= 1
                if indeg[b] == 0:
                    ready.append(b)
                    ready.sort(key=handles.index)
    order += [h for h in handles if h not in order]  # a cycle cannot happen; never lose a node
    pos = {h: i for i, h in enumerate(order)}
    nodes = [read_node(drv, h) for h in order]
    edges = sorted((pos[a], pos[b], EDGE_TYPES.get(t, t), PORTS.get(fp, fp), tp) for a, b, t, fp, tp in raw_edges)
    return {"nodes": nodes, "edges": edges, "handle": graph}


def read_node(drv, node):
    t = c_int(-1)
    drv.call("cuGraphNodeGetType", c_void_p(node), ctypes.byref(t))
    d = {"type": NODE_TYPES.get(t.value, str(t.value)), "handle": node}
    if t.value != 0:
        return d
    p = KernelNodeParams()
    drv.call("cuGraphKernelNodeGetParams", c_void_p(node), ctypes.byref(p))
    func = p.func
    if not func and p.kern:
        f = c_void_p()
        if drv.try_call("cuKernelGetFunction", ctypes.byref(f), c_void_p(p.kern)) == 0:
            func = f.value
    name = ctypes.c_char_p()
    if func and drv.try_call("cuFuncGetName", ctypes.byref(name), c_void_p(func)) == 0 and name.value:
        d["name"] = name.value.decode()
    elif p.kern and drv.try_call("cuKernelGetName", ctypes.byref(name), c_void_p(p.kern)) == 0 and name.value:
        d["name"] = name.value.decode()
    else:
        d["name"] = f"<function {func or p.kern or 0:#x}>"
    d["func"] = func
    d["handle_kind"] = "CUfunction" if p.func else ("CUkernel" if p.kern else "none")
    d["grid"] = f"{p.gridDimX}x{p.gridDimY}x{p.gridDimZ}"
    d["block"] = f"{p.blockDimX}x{p.blockDimY}x{p.blockDimZ}"
    d["dyn_smem"] = p.sharedMemBytes
    d["extra"] = "set" if p.extra else "NULL"
    fa = {}
    for label, attr in FUNC_ATTRS:
        v = c_int(0)
        fa[label] = v.value if func and drv.try_call("cuFuncGetAttribute", ctypes.byref(v), attr,
                                                        c_void_p(func)) == 0 else "-"
    d["func_attrs"] = fa
    d["attrs"] = node_attrs(drv, node)
    if not READ_ARGS:
        d["args"] = ["(not read: --no-args)"]
    else:
        d["args"] = decode_args(d["name"], kernel_args(drv, func, p.kernelParams)) if func else ["no CUfunction"]
    return d


# -- printing ---------------------------------------------------------------------------------
def node_lines(d):
    if d["type"] != "kernel":
        return [d["type"]]
    fa = d["func_attrs"]
    attrs = ", ".join(f"{k}={v}" for k, v in d["attrs"].items() if v != "-")
    return [f"kernel {short_name(d['name'])}",
            f"  grid {d['grid']} block {d['block']} dyn_smem {d['dyn_smem']} extra {d['extra']} ({d['handle_kind']})",
            f"  regs {fa['regs']} smem {fa['static_smem']} local {fa['local']} sm_{fa['binary_version']} "
            f"ptx {fa['ptx_version']} ca {fa['cache_mode_ca']} dyn {fa['max_dyn_smem']} carve {fa['smem_carveout']}",
            f"  attrs: {attrs or '(none readable)'}",
            *[f"  args: {' '.join(d['args'][i:i + 5])}" for i in range(0, len(d["args"]), 5)]]


def side_by_side(title, left, right, lname, rname, width=78):
    print(f"\n== {title}: {lname} | {rname}")
    rows = max(len(left["nodes"]), len(right["nodes"]))
    for i in range(rows):
        a = node_lines(left["nodes"][i]) if i < len(left["nodes"]) else ["(no node)"]
        b = node_lines(right["nodes"][i]) if i < len(right["nodes"]) else ["(no node)"]
        for k in range(max(len(a), len(b))):
            la = (f"[{i}] " if k == 0 else "    ") + (a[k] if k < len(a) else "")
            lb = (f"[{i}] " if k == 0 else "    ") + (b[k] if k < len(b) else "")
            print(f"{la[:width]:<{width}} | {lb[:width]}")
    fmt = lambda e: f"{e[0]}->{e[1]} {e[2]}/{e[3]}" + (f" to_port {e[4]}" if e[4] else "")  # noqa: E731
    print(f"{'edges: ' + ', '.join(map(fmt, left['edges'])):<{width}} | edges: {', '.join(map(fmt, right['edges']))}")


def differences(title, left, right):
    """What differs between two graphs read by read_graph, beyond addresses and handles."""
    out = []
    if len(left["nodes"]) != len(right["nodes"]):
        out.append(f"{title}: {len(left['nodes'])} nodes vs {len(right['nodes'])}")
    for i, (a, b) in enumerate(zip(left["nodes"], right["nodes"])):
        if a["type"] != b["type"]:
            out.append(f"{title} node [{i}]: {a['type']} vs {b['type']}")
            continue
        if a["type"] != "kernel":
            continue
        who = f"{title} node [{i}] ({short_name(a['name'])})"
        if a["name"] != b["name"]:
            out.append(f"{title} node [{i}]: function {short_name(a['name'])} vs {short_name(b['name'])}")
        elif a["func"] != b["func"]:
            out.append(f"{who}: same function name, different function handle (another module, e.g. "
                       "eagle's libeagle_cuda.so and the peers' library each load the compaction)")
        for key in ("grid", "block", "dyn_smem", "extra", "handle_kind"):
            if a[key] != b[key]:
                out.append(f"{who}: {key} {a[key]} vs {b[key]}")
        for key, v in a["func_attrs"].items():
            if v != b["func_attrs"].get(key):
                out.append(f"{who}: function attribute {key} {v} vs {b['func_attrs'].get(key)}")
        for key, v in a["attrs"].items():
            if v != b["attrs"].get(key):
                out.append(f"{who}: node attribute {key} {v} vs {b['attrs'].get(key)}")
        if a["args"] != b["args"]:
            diff = [f"{x} vs {y}" for x, y in zip(a["args"], b["args"]) if x != y]
            if len(a["args"]) != len(b["args"]):
                diff.append(f"{len(a['args'])} arguments vs {len(b['args'])}")
            out.append(f"{who}: arguments {'; '.join(diff)}")
    if left["edges"] != right["edges"]:
        out.append(f"{title}: edges {left['edges']} vs {right['edges']}")
    return out


def dot(drv, graph, path):
    """Writes the graph's verbose DOT to path; returns its text with addresses and handles blanked."""
    drv.call("cuGraphDebugDotPrint", c_void_p(graph), path.encode(), 1)  # CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE
    with open(path) as fh:
        text = fh.read()
    text = re.sub(r"0x[0-9a-fA-F]+", "0x_", text)
    return [re.sub(r"\b\d{6,}\b", "N", line) for line in text.splitlines()]


# -- main -------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logn", type=int, default=20, help="samples: 2^logn (bench_cuda times 20 and 10)")
    ap.add_argument("--kinds", default="0,2,3,4", help="peer body kinds to compare with eagle (peers.cu)")
    ap.add_argument("--dot", default=os.path.join(os.environ.get("OUT", "/tmp"), "aset_dot"))
    ap.add_argument("--dot-lines", type=int, default=60, help="diff lines of each DOT comparison to print")
    ap.add_argument("--no-args", action="store_true", help="do not read the kernel nodes' arguments")
    args = ap.parse_args()
    faulthandler.enable()  # a fault while reading driver-owned memory still says where
    global READ_ARGS
    READ_ARGS = not args.no_args
    kinds = [int(k) for k in args.kinds.split(",") if k.strip()]

    import cupy as cp
    import eagle
    from eagle import conditional as _cond
    from bench_cuda import build_peers

    drv = Driver()
    b = eagle.backend("cuda")
    b.probe()
    peers = build_peers()
    s = b.stream(non_blocking=True)
    u64 = ctypes.c_uint64()
    rc = peers.peer_function(b"peer_drop_step", ctypes.byref(u64))
    if rc:
        raise DiagError(f"peer_function(peer_drop_step): cudaError {rc}")
    f_drop = u64.value
    n = 1 << args.logn

    # eagle's graph, recorded as bench_cuda 2b records it; the top-level graph and the body are
    # taken from the capturing streams when the WHILE's body is opened.
    seen = []
    orig_begin = _cond.Conditional.begin

    def begin(self):
        ref = orig_begin(self)
        try:
            seen.append((drv.capture_graph(self._origin_raw), drv.capture_graph(ref.handle)))
        except DiagError as e:
            seen.append(e)
        return ref

    _cond.Conditional.begin = begin
    mask, steps = cp.zeros(n, cp.uint8), cp.zeros(n, cp.uint32)
    cp.cuda.Device().synchronize()
    aset = eagle.ActiveSet(mask, backend=b, stream=s)

    def drop_step(st):
        st.run(f_drop, [aset.index_map, aset.count, steps, mask], n, block=256)

    loop = eagle.repeat_while([drop_step, aset], aset, (1 << 31), name="step + compact")
    try:
        g = eagle.Graph.build([aset, loop], planes=[mask, steps], stream=s, toggle=False)
    finally:
        _cond.Conditional.begin = orig_begin
    cp.cuda.Device().synchronize()
    print(f"eagle {eagle.__file__}, {b!r}, build {b.build_info}")
    print(f"n = 2^{args.logn}; eagle Graph.build: {g.kernel_node_count} kernel nodes (launcher's count)")
    if len(seen) != 1 or isinstance(seen[0], DiagError):
        raise DiagError(f"expected one WHILE body opened during Graph.build, got {seen!r}")
    eagle_top, eagle_body = seen[0]

    graphs = {}
    try:
        graphs["eagle"] = (read_graph(drv, eagle_top), read_graph(drv, eagle_body))
    except DiagError as e:
        print(f"FAILED reading eagle's graph: {e}")
    raw = {"mask": cp.zeros(n, cp.uint8), "steps": cp.zeros(n, cp.uint32), "idx": cp.zeros(n, cp.int32),
           "count": cp.zeros(1, cp.uint32)}
    cp.cuda.Device().synchronize()
    ptrs = [ctypes.c_void_p(raw[k].data.ptr) for k in ("mask", "steps", "idx", "count")]
    peer_graphs = {}
    for kind in kinds:
        top, body = ctypes.c_uint64(), ctypes.c_uint64()
        rc = peers.peer_activeset_graph(ctypes.c_uint64(s.handle), *ptrs, n, kind, ctypes.byref(top),
                                        ctypes.byref(body))
        if rc:
            print(f"FAILED: peer_activeset_graph kind {kind}: cudaError {rc}")
            continue
        peer_graphs[kind] = top.value
        try:
            graphs[f"peer kind {kind}"] = (read_graph(drv, top.value), read_graph(drv, body.value))
        except DiagError as e:
            print(f"FAILED reading peer kind {kind}'s graph: {e}")

    all_diffs = {}
    if "eagle" in graphs:
        for name, (top, body) in graphs.items():
            if name == "eagle":
                continue
            side_by_side("top level", graphs["eagle"][0], top, "eagle", name)
            side_by_side("WHILE body", graphs["eagle"][1], body, "eagle", name)
            all_diffs[name] = (differences("top level", graphs["eagle"][0], top)
                               + differences("WHILE body", graphs["eagle"][1], body))
        for name, diffs in all_diffs.items():
            print(f"\n== differences, eagle vs {name} ({len(diffs)}):")
            for line in diffs or ["none beyond addresses and handles"]:
                print(f"- {line}")

    # the verbose DOT files (the conditional node's parameters are there only)
    try:
        os.makedirs(args.dot, exist_ok=True)
        texts = {"eagle": dot(drv, eagle_top, os.path.join(args.dot, "eagle.dot"))}
        for kind, top in peer_graphs.items():
            texts[f"peer kind {kind}"] = dot(drv, top, os.path.join(args.dot, f"peer_kind{kind}.dot"))
        print(f"\nverbose DOT files in {args.dot}")
        for name, lines in texts.items():
            if name == "eagle":
                continue
            d = list(difflib.unified_diff(texts["eagle"], lines, "eagle", name, lineterm="", n=0))
            print(f"\n== DOT diff (addresses blanked), eagle vs {name}: {len(d)} lines"
                  + (f", the first {args.dot_lines}" if len(d) > args.dot_lines else ""))
            for line in d[:args.dot_lines]:
                print(line[:200])
    except (DiagError, OSError) as e:
        print(f"FAILED writing the DOT files: {e}")
    for top in peer_graphs.values():
        peers.peer_activeset_graph_release(ctypes.c_uint64(top))

    # correctness smoke: one launch each, the same samples dropped at the same steps
    print("\n== one launch each (a smoke check, not the benchmark):")
    cs = cp.cuda.ExternalStream(s.handle)
    with cs:
        mask.fill(0)
        steps.fill(0)
    t0 = time.perf_counter()
    g.launch()
    g.synchronize()
    t1 = time.perf_counter()
    ran = g.ran(loop)
    ref = steps.get()
    ok = bool((mask == 1).all()) and int(ref.max()) == ran
    print(f"eagle: {ran} iterations, all dropped: {bool((mask == 1).all())}, wall {(t1 - t0) * 1e6 / max(ran, 1):.2f} "
          f"us/iter (host wall, includes the launch)")
    dbl = ctypes.c_double()
    for kind in sorted(set(kinds) | set(ALL_KINDS)):
        rc = peers.peer_activeset_while(ctypes.c_uint64(s.handle), *ptrs, n, kind, 1, ctypes.byref(dbl))
        if rc:
            print(f"peer kind {kind}: FAILED, cudaError {rc}")
            ok = False
            continue
        got = raw["steps"].get()
        same = (got == ref).all() and bool((raw["mask"] == 1).all()) and int(raw["count"].get()[0]) == 0
        ok = ok and bool(same)
        print(f"peer kind {kind}: {int(got.max())} iterations, same steps as eagle: {bool(same)}, "
              f"{dbl.value / max(int(got.max()), 1):.3f} us/iter (events, one launch)")
    print(f"\nsmoke: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DiagError as e:
        print(f"aset_body_diff: {e}")
        sys.exit(2)
