"""The opencl kind (backends/opencl), built out of tree from the installed kit exactly as
docs/add_a_backend.md tells an author, checked with eagle.check, and the oscillator card run on it
against the cpu kind and an independent numpy reference, bit for bit in exact mode.

Skipped, naming why, where the OpenCL headers, the ICD loader or a platform (PoCL:
``apt-get install pocl-opencl-icd ocl-icd-opencl-dev opencl-headers``) are absent."""
import ctypes.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from _subproc import run_snippet
from test_opencl_capture import _command_buffer_version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIR = os.path.join(ROOT, "backends", "opencl")
CARD = os.path.join(ROOT, "examples", "oscillator")
BARRIER = os.path.join(ROOT, "examples", "barrier")
# What the backend provides on every platform; the capture groups (CAPTURE) too where the device
# offers cl_khr_command_buffer 0.9 and $EAGLE_OPENCL_COMMAND_BUFFER is not 0; every other group
# and entry is left out with its why line.
PROVIDED = ("static", "required", "stream", "fork", "exec", "device", "interop", "filtering", "memcpy", "host_alloc",
            "host_free", "host_func", "module_from_source", "module_from_image", "module_function",
            "module_release", "mem_alloc", "mem_free", "reorder_device", "stream_query")
CAPTURE = ("capturer", "captured", "attribution", "graph", "launcher", "launcher_query")
LEFT_OUT = ("conditional", "conditional_begin_case")

pytestmark = pytest.mark.slow


def _missing():
    if shutil.which("cmake") is None:
        return "cmake is not installed"
    if not any(os.path.exists(os.path.join(d, "CL", "cl.h")) for d in ("/usr/include", "/usr/local/include")):
        return "no OpenCL headers (CL/cl.h; Debian: opencl-headers)"
    if ctypes.util.find_library("OpenCL") is None:
        return "no OpenCL ICD loader (libOpenCL.so; Debian: ocl-icd-opencl-dev)"
    if not os.path.isdir("/etc/OpenCL/vendors") or not os.listdir("/etc/OpenCL/vendors"):
        return "no OpenCL platform registered in /etc/OpenCL/vendors (Debian: pocl-opencl-icd)"
    return None


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    why = _missing()
    if why:
        pytest.skip(why)
    build = tmp_path_factory.mktemp("opencl-build")
    cmake_dir = subprocess.run([sys.executable, "-m", "eagle", "--cmake-dir"], check=True, capture_output=True,
                               text=True, cwd=build).stdout.strip()
    for cmd in (["cmake", "-S", SOURCE_DIR, "-B", str(build), f"-Deagle_DIR={cmake_dir}"],
                ["cmake", "--build", str(build)]):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
    lib = build / "libeagle_opencl.so"
    assert lib.is_file()
    probe = run_snippet("""
        import eagle
        result = eagle.backend("opencl").kind
    """, env={"EAGLE_BACKEND_OPENCL": str(lib)}, timeout=120)
    if probe.status != "ok" or probe.result != "opencl":
        pytest.skip(f"the opencl backend does not load here: {probe}")
    return str(lib)


@pytest.mark.parametrize("command_buffer", ["", "0"], ids=["as-offered", "turned-off"])
def test_check_passes_every_provided_group(library, command_buffer):
    """eagle.check passes every group provided, with cl_khr_command_buffer as the device offers it
    and turned off ($EAGLE_OPENCL_COMMAND_BUFFER=0: what NVIDIA's OpenCL, which lacks it, gives)."""
    env = dict(os.environ, EAGLE_OPENCL_COMMAND_BUFFER=command_buffer)
    done = subprocess.run([sys.executable, "-m", "eagle.check", "--json", library], capture_output=True, text=True,
                          timeout=900, cwd=os.path.dirname(library), env=env)
    report = json.loads(done.stdout)
    (entry,) = report
    outcomes = {}
    for r in entry["results"]:
        if r["kind"] == "static" and r["id"].endswith(".release_null"):
            continue  # every seam symbol is exported, so release(NULL) is checked even for a group left out
        outcomes.setdefault(r["group"], set()).add(r["result"])
    assert done.returncode == 0, done.stdout[-4000:]
    version = _command_buffer_version()
    records = command_buffer != "0" and version is not None and version[:2] == (0, 9)
    for group in PROVIDED + (CAPTURE if records else ()):
        assert "pass" in outcomes.get(group, set()), (group, outcomes.get(group))
        assert outcomes[group] <= {"pass", "skip"}, (group, outcomes[group])
    for group in LEFT_OUT + (() if records else CAPTURE):
        assert outcomes.get(group, set()) <= {"not_supported"}, (group, outcomes.get(group))


def test_examples_bit_exact_against_cpu_and_numpy(library):
    """The card's loops and the barrier example on opencl give the cpu kind's bits; the card's
    single kernel numpy's."""
    out = run_snippet("""
        import sys
        import numpy as np
        import eagle
        sys.path.insert(0, CARD)
        import oscillator as o
        n = 500
        omega, zeta, steps = o.workload(n)
        b = eagle.backend("opencl")
        mod = b.compile(o.os.path.join(CARD, "oscillator.c"), exact=True)
        # the single-kernel reference against numpy's independent RK4
        x, v = b.empty(n), b.empty(n)
        om, ze, target = b.asarray(omega), b.asarray(zeta), b.asarray(steps)
        s = b.stream()
        s.run(mod.osc_single, [x, v, om, ze, target], n)
        s.synchronize()
        xr, vr = o.numpy_reference(omega, zeta, steps)
        single = bool(np.array_equal(x.numpy(), xr) and np.array_equal(v.numpy(), vr))
        # the card as written: eagle.Graph.build takes its host-decided path (no conditional: the
        # pieces are launchers where the backend records, on cl_khr_command_buffer, else enqueued
        # again at each launch), drained, as a WHILE of K steps, and as a WHILE that reorders the
        # planes (reorder_device) when the live samples thin out
        xc, vc = o.run("cpu", n)
        card = {}
        for loop, reorder in (("drain", None), ("while", None), ("while", 0.5)):
            xo, vo = o.run("opencl", n, loop=loop, reorder=reorder)
            card[f"{loop} reorder={reorder}"] = bool(np.array_equal(xo, xc) and np.array_equal(vo, vc))
        # ActiveSet.drain on its own, eagerly: every sample ends its run, none stays live
        done, mask = b.empty(n, "int32"), b.empty(n, "uint8")
        aset = eagle.ActiveSet(mask, backend=b, stream=s)
        s.run(mod.osc_reset, [x, v, done, mask], n)
        rounds = -(-int(steps.max()) // 32) + 1
        aset.drain(s, mod.osc_steps_drain, [x, v, om, ze, done, target, mask, 32], rounds, compacted=False)
        aset.compact(s)
        s.synchronize()
        eager = bool(np.array_equal(x.numpy(), xc) and np.array_equal(v.numpy(), vc))
        # the barrier example (Philox normals, exp, a WHILE over an ActiveSet) against cpu
        sys.path.insert(0, BARRIER)
        import barrier
        pc, tc = barrier.run("cpu", 2000)
        po, to = barrier.run("opencl", 2000)
        barrier_same = bool(np.array_equal(pc, po) and np.array_equal(tc, to))
        # eagle's arrays on opencl are DLPack device type 4 (kDLOpenCL)
        dl = list(x.__dlpack_device__())
        result = [single, card, eager, int(aset.live), bool(np.array_equal(done.numpy(), steps)), barrier_same, dl]
    """, env={"EAGLE_BACKEND_OPENCL": library}, globals={"CARD": CARD, "BARRIER": BARRIER}, timeout=300)
    single, card, eager, live, all_done, barrier_same, dl = out.result
    assert single, "osc_single on opencl differs from the numpy RK4 reference"
    assert card and all(card.values()), f"the card on opencl differs from the cpu kind: {card}"
    assert eager, "the eagerly drained card on opencl differs from the cpu kind"
    assert live == 0 and all_done
    assert barrier_same, "the barrier example on opencl differs from the cpu kind"
    assert dl == [4, 0]


def test_no_matching_platform_is_unavailable_naming_the_variable(library):
    """$EAGLE_OPENCL_PLATFORM naming no platform: the library loads, its use is BackendUnavailable."""
    out = run_snippet("""
        import eagle
        b = eagle.backend("opencl")
        b.stream()
    """, env={"EAGLE_BACKEND_OPENCL": library, "EAGLE_OPENCL_PLATFORM": "NoSuchVendor"}, timeout=60)
    out.expect_raises("BackendUnavailable", match="EAGLE_OPENCL_PLATFORM='NoSuchVendor'")


def test_broken_source_is_compile_error_with_the_line(library):
    """A source that does not compile: CompileError naming the source and its line (the user's
    numbering, though the backend prepends its floating-point pragma)."""
    out = run_snippet("""
        import eagle
        src = b"#include <eagle/kernel.h>\\nEAGLE_KERNEL(k, (double*, x))\\n{\\n    x[i] = = 1.0;\\n}\\n"
        eagle.backend("opencl").compile(src, name="broken.c", exact=True)
    """, env={"EAGLE_BACKEND_OPENCL": library}, timeout=120)
    out.expect_raises("CompileError", match="broken.c:4:")
