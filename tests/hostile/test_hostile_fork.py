"""eagle objects across os.fork() (cpu backend).

A forked child has one thread: the workers of every stream made before the fork (and the compute
pool's threads) are not there, and a lock another thread held at the fork stays held. The contract:
in the child, every use of a stream, launcher, capture, fork, ... made before the fork fails at once
with an eagle error naming the cause (it was created before fork() in process <parent pid>), and
releasing such an object never waits (it is leaked: the child's memory is its own); objects made in
the child work, and so does the child's default stream; the parent is not affected.

Each case runs in a child interpreter (tests/_subproc.py) that forks again: its parent gives the
forked child DEADLINE seconds to report, then kills it and reports it hung; run_snippet's own
timeout catches a parent that hangs."""
import os

import pytest

from _subproc import run_snippet

DEADLINE = 15.0  # seconds a forked child gets to report before it counts as hung
PROMPT = 5.0     # a refusal (or an exit) slower than this waited for something that is not there

SETUP = r'''
import json, os, signal, sys, time
import numpy as np
import eagle

cpu = eagle.backend("cpu")
SRC = """
#include <eagle/kernel.h>
EAGLE_KERNEL(axpb, (double*, x), (double, a), (double, b)) { (void)n; x[i] = x[i] * a + b; }
/* holds its stream until *flag is set (or some tens of seconds have passed) */
EAGLE_KERNEL(hold, (int32_t*, flag)) {
    (void)n; (void)i;
    for (long k = 0; k < 40000000000L && !*(volatile int32_t*)flag; ++k) {}
}
"""
mod = eagle.compile(SRC, backend=cpu, name="fork.c", cache=False)


def _collect(pid, r, deadline):
    """Wait for the forked child `pid` (its report comes through the pipe end `r`)."""
    end = time.monotonic() + deadline
    t0 = time.monotonic()
    status = None
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return {"status": "hung", "after": deadline}
    seconds = time.monotonic() - t0
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    rep = json.loads(data) if data else {"status": "no report"}
    rep["exit"] = os.waitstatus_to_exitcode(status)
    rep["wall"] = seconds
    return rep


def in_child(work, deadline=DEADLINE):
    """Run work() in a forked child and return how it ended there: {"status": "ok", "value"} or
    {"status": "raised", "type", "eagle", "message"}, with "seconds" (the call) and "exit"; or
    {"status": "hung"} when the child did not finish within `deadline` seconds (it is killed)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            t0 = time.monotonic()
            try:
                rep = {"status": "ok", "value": work()}
            except BaseException as e:
                rep = {"status": "raised", "type": type(e).__name__, "eagle": isinstance(e, eagle.EagleError),
                       "message": str(e)}
            rep["seconds"] = time.monotonic() - t0
            os.write(w, json.dumps(rep, default=repr).encode())
        finally:
            os._exit(0)
    os.close(w)
    return _collect(pid, r, deadline)


def values(a):
    return np.from_dlpack(a).tolist()
'''


def run_fork_case(code, timeout=240.0, globals=None):
    out = run_snippet(SETUP + code, timeout=timeout, globals={"DEADLINE": DEADLINE, **(globals or {})})
    return out.expect_ok()


def assert_refused_naming_fork(rep, pid, what):
    assert rep["status"] != "hung", f"{what}: the forked child hung (killed after {rep['after']} s)"
    assert rep["status"] == "raised", f"{what}: the forked child was not refused: {rep}"
    assert rep["eagle"], f"{what}: refused with a {rep['type']}, not an eagle error: {rep}"
    msg = rep["message"]
    assert "before fork()" in msg and f"process {pid}" in msg, f"{what}: the error does not name the fork: {msg}"
    assert "spawn" in msg, f"{what}: the error does not say what to do instead: {msg}"
    assert rep["seconds"] < PROMPT, f"{what}: the refusal took {rep['seconds']:.1f} s"
    assert rep["exit"] == 0, f"{what}: the forked child exited with {rep['exit']}: {rep}"


def test_a_stream_made_before_fork_is_refused_in_the_child_and_the_parent_keeps_it():
    # the reproducer of the defect: the child hung in synchronize for ever
    res = run_fork_case('''
x = eagle.asarray(np.zeros(4), backend=cpu)
s = cpu.stream()
s.copy(x, np.ones(4))
s.synchronize()

def child():
    s.copy(x, np.full(4, 2.0))
    s.synchronize()
    return "no error"

def child_sync_only():
    s.synchronize()
    return "no error"

got = in_child(child)
got_sync = in_child(child_sync_only)
s.copy(x, np.full(4, 3.0))
s.synchronize()
result = {"pid": os.getpid(), "child": got, "sync": got_sync, "parent": values(x)}
''')
    assert_refused_naming_fork(res["child"], res["pid"], "copy + synchronize on the stream")
    assert "stream" in res["child"]["message"]
    assert_refused_naming_fork(res["sync"], res["pid"], "synchronize of the stream")
    assert res["parent"] == [3.0] * 4


def test_eagle_run_with_no_stream_is_refused_in_the_child():
    # with no stream eagle works on the thread's own stream, which the parent made
    res = run_fork_case('''
x = eagle.asarray(np.ones(8), backend=cpu)
eagle.run(mod.axpb, [x, 2.0, 1.0], 8)        # 3; the thread's own stream exists from here on
eagle.copy(x, np.full(8, 1.0))               # 1

def run():
    eagle.run(mod.axpb, [x, 2.0, 1.0], 8)
    return values(x)

def copy():
    eagle.copy(x, np.full(8, 9.0))
    return values(x)

got = {"run": in_child(run), "copy": in_child(copy)}
eagle.run(mod.axpb, [x, 2.0, 1.0], 8)        # 3 in the parent, whatever the child did
result = {"pid": os.getpid(), "child": got, "parent": values(x)}
''')
    for what, rep in res["child"].items():
        assert_refused_naming_fork(rep, res["pid"], f"eagle.{what} with no stream")
    assert res["parent"] == [3.0] * 8


def test_work_queued_at_fork_time_is_refused_and_never_waited_for_in_the_child():
    res = run_fork_case('''
import threading
flag = np.zeros(1, np.int32)
x = eagle.asarray(np.zeros(8), backend=cpu)
s = cpu.stream()
s.run(mod.hold, [flag], 1)                   # the stream's worker is busy until flag[0] is set
s.copy(x, np.full(8, 5.0))                   # and this waits behind it
p = cpu.stream()
ev = threading.Event()
p.host_func(ev.wait)                          # a Python host function blocked at the fork
p.copy(x, np.full(8, 6.0))
s2 = cpu.stream()                            # a stream with nothing queued that another waits for
cpu.fence(s.handle, s2.handle)

def sync():
    s.synchronize()
    return "no error"

def sync_host_function_stream():
    p.synchronize()
    return "no error"

def sync_fenced():
    s2.synchronize()
    return "no error"

def release():
    t0 = time.monotonic()
    s.close()
    p.close()
    s2.close()
    return time.monotonic() - t0

got = {"synchronize": in_child(sync), "host function stream": in_child(sync_host_function_stream),
       "fenced stream": in_child(sync_fenced), "release": in_child(release)}
s.copy(x, np.full(8, 7.0))
flag[0] = 1
s.synchronize()
after_s = values(x)
ev.set()
p.synchronize()
s2.synchronize()
result = {"pid": os.getpid(), "child": got, "after_s": after_s, "after_p": values(x)}
''')
    for what in ("synchronize", "host function stream", "fenced stream"):
        assert_refused_naming_fork(res["child"][what], res["pid"], what)
    rel = res["child"]["release"]
    assert rel["status"] == "ok", f"releasing streams with work queued at the fork: {rel}"
    assert rel["value"] < PROMPT, f"the releases waited {rel['value']:.1f} s"
    assert res["after_s"] == [7.0] * 8
    assert res["after_p"] == [6.0] * 8


def test_every_object_made_before_fork_is_refused_in_the_child():
    res = run_fork_case('''
x = eagle.asarray(np.zeros(8), backend=cpu)
s = cpu.stream()
t = cpu.stream()

def record(st):
    st.run(mod.axpb, [x, 1.0, 1.0], 8)

with cpu.capture(s) as cap:
    record(s)
g = cpu.graph_from_captured(cap.captured)
g.set_stream(s)
launcher = g.launcher()
launcher.launch()
launcher.synchronize()                       # x = 1
f = cpu.fork(t, 2)
with cpu.capture(t) as cap2:                 # a recording not made into a graph yet
    record(t)
u = cpu.stream()
open_capture = cpu.capture(u)                # a capture still recording at the fork
open_capture.begin()
u.run(mod.axpb, [np.zeros(8), 1.0, 1.0], 8)

def fence_with_new(pair):
    new = cpu.stream()                       # a stream of the child's own, alive through the call
    cpu.fence(*pair(new))

actions = {
    "stream run": lambda: s.run(mod.axpb, [x, 1.0, 1.0], 8),
    "stream host_func": lambda: s.host_func(lambda: None),
    "stream capture": lambda: cpu.capture(s).begin(),
    "stream fork": lambda: cpu.fork(s, 2),
    "fence from it": lambda: fence_with_new(lambda new: (s.handle, new.handle)),
    "fence into it": lambda: fence_with_new(lambda new: (new.handle, s.handle)),
    "launcher launch": lambda: launcher.launch(),
    "launcher synchronize": lambda: launcher.synchronize(),
    "graph launcher": lambda: g.launcher(),
    "graph from captured": lambda: cpu.graph_from_captured(cap2.captured),
    "capture end": lambda: open_capture.end(),
    "fork fork": lambda: f.fork(),
}
got = {k: in_child(a) for k, a in actions.items()}
launcher.launch()
launcher.synchronize()                       # x = 2
s.run(mod.axpb, [x, 1.0, 1.0], 8)
s.synchronize()                              # x = 3
f.fork()
f.join()
t.synchronize()
open_capture.end()
cpu.graph_from_captured(cap2.captured).launcher()
result = {"pid": os.getpid(), "child": got, "parent": values(x)}
''')
    for what, rep in res["child"].items():
        assert_refused_naming_fork(rep, res["pid"], what)
    assert res["parent"] == [3.0] * 8


def test_objects_made_in_the_child_work_and_compute_right():
    # The parent has used everything first: its compute pool and replay threads exist, its thread
    # has its own stream, its default stream has run work. None of those threads is in the child.
    res = run_fork_case('''
N = 1 << 20

def replayable(b, s, record):
    with b.capture(s) as cap:
        record(s)
    g = b.graph_from_captured(cap.captured)
    g.set_stream(s)
    return g.launcher()

def concurrent_branches(b, s, planes):
    def record(st):
        with b.fork(st, len(planes)) as f:
            for br, a in zip(f.branches, planes):
                br.run(mod.axpb, [a, 2.0, 1.0], a.size)
    return replayable(b, s, record)

def work():
    s = cpu.stream()
    y = eagle.asarray(np.arange(N, dtype=np.float64), backend=cpu)
    s.run(mod.axpb, [y, 2.0, 1.0], N)        # big enough to be spread over the compute pool
    s.synchronize()
    planes = [np.zeros(N), np.zeros(N), np.zeros(N)]
    launcher = concurrent_branches(cpu, s, planes)
    launcher.launch(3)
    launcher.synchronize()                   # the branches ran concurrently (replay threads)
    z, z2 = np.zeros(8), np.zeros(8)
    cpu.copy(z, np.full(8, 4.0), stream=0)   # the default stream (raw 0), then a blocking stream
    b = cpu.stream()                         # ordered after it
    b.copy(z2, z)
    b.synchronize()
    m2 = eagle.compile(SRC, backend=cpu, name="child.c", cache=False)
    w = eagle.asarray(np.ones(4), backend=cpu)
    b.run(m2.axpb, [w, 3.0, 0.0], 4)
    b.synchronize()
    for o in (s, b):
        o.close()
    launcher.close()
    return {"pool": bool(np.array_equal(np.from_dlpack(y), np.arange(N) * 2.0 + 1.0)),
            "replay": [float(p[0]) for p in planes] + [bool((p == p[0]).all()) for p in planes],
            "default stream": z2.tolist(),
            "module compiled in the child": values(w)}

s = cpu.stream()
y = eagle.asarray(np.arange(N, dtype=np.float64), backend=cpu)
s.run(mod.axpb, [y, 2.0, 1.0], N)
s.synchronize()
planes = [np.zeros(N), np.zeros(N)]
launcher = concurrent_branches(cpu, s, planes)
launcher.launch(2)
launcher.synchronize()
eagle.run(mod.axpb, [y, 1.0, 0.0], N)
z, z2 = np.zeros(8), np.zeros(8)
cpu.copy(z, np.ones(8), stream=0)
b0 = cpu.stream()
b0.copy(z2, z)
b0.synchronize()

got = in_child(work)
launcher.launch()
launcher.synchronize()
s.run(mod.axpb, [y, 1.0, 1.0], N)
s.synchronize()
result = {"child": got, "parent replay": [float(p[0]) for p in planes],
          "parent pool": bool(np.array_equal(np.from_dlpack(y), np.arange(N) * 2.0 + 2.0))}
''')
    rep = res["child"]
    assert rep["status"] == "ok", f"new objects in the forked child: {rep}"
    v = rep["value"]
    assert v["pool"], "a kernel over the compute pool computed wrong in the child"
    assert v["replay"] == [7.0, 7.0, 7.0, True, True, True], v["replay"]
    assert v["default stream"] == [4.0] * 8
    assert v["module compiled in the child"] == [3.0] * 4
    assert res["parent replay"] == [7.0, 7.0]
    assert res["parent pool"]


HAMMER = r"""
#include <eagle/kernel.h>
typedef struct { uint32_t struct_size, flags; int32_t device, reserved0; } sdesc_t;
typedef struct { uint32_t struct_size, flags; int32_t device, reserved0; uint64_t stream; } cdesc_t;
/* Until *stop is set: make a stream, capture a copy on it, wait for it, release it (and now and then
   copy on it eagerly first), through the seam functions whose addresses fn holds: this thread is
   nearly always inside the backend, most of the time holding one of its locks. */
EAGLE_KERNEL(hammer, (int32_t*, stop), (uint64_t*, fn), (int64_t*, laps), (double*, buf)) {
    (void)n; (void)i;
    int (*stream_create)(const sdesc_t*, void**) = (int (*)(const sdesc_t*, void**))fn[0];
    int (*stream_ptr)(void*, uint64_t*) = (int (*)(void*, uint64_t*))fn[1];
    int (*copy)(uint64_t, uint64_t, uint64_t, int32_t, uint64_t) =
        (int (*)(uint64_t, uint64_t, uint64_t, int32_t, uint64_t))fn[2];
    int (*capturer_create)(const cdesc_t*, void**) = (int (*)(const cdesc_t*, void**))fn[3];
    int (*capturer_begin)(void*) = (int (*)(void*))fn[4];
    int (*capturer_end)(void*, void**) = (int (*)(void*, void**))fn[5];
    void (*captured_release)(void*) = (void (*)(void*))fn[6];
    void (*capturer_release)(void*) = (void (*)(void*))fn[7];
    int (*stream_synchronize)(void*) = (int (*)(void*))fn[8];
    void (*stream_release)(void*) = (void (*)(void*))fn[9];
    const uint64_t dst = (uint64_t)(uintptr_t)buf, src = (uint64_t)(uintptr_t)(buf + 8);
    while (!*(volatile int32_t*)stop) {
        sdesc_t d = {sizeof d, 0, -1, 0};
        void *s = 0, *cap = 0, *captured = 0;
        uint64_t raw = 0;
        if (stream_create(&d, &s)) return;
        stream_ptr(s, &raw);
        if ((*laps & 63) == 0) copy(dst, src, 64, 4, raw);  /* eager: the stream's worker starts */
        cdesc_t c = {sizeof c, 0, -1, 0, raw};
        if (capturer_create(&c, &cap) == 0) {
            capturer_begin(cap);
            copy(dst, src, 64, 4, raw);
            if (capturer_end(cap, &captured) == 0) captured_release(captured);
            capturer_release(cap);
        }
        stream_synchronize(s);
        stream_release(s);
        ++*(volatile int64_t*)laps;
    }
}
/* Until *stop is set: look a stream up (the handle registry's lock, and no other). */
EAGLE_KERNEL(lookups, (int32_t*, stop), (uint64_t*, fn), (int64_t*, laps)) {
    (void)n; (void)i;
    int (*stream_create)(const sdesc_t*, void**) = (int (*)(const sdesc_t*, void**))fn[0];
    int (*stream_ptr)(void*, uint64_t*) = (int (*)(void*, uint64_t*))fn[1];
    void (*stream_release)(void*) = (void (*)(void*))fn[9];
    sdesc_t d = {sizeof d, 0, -1, 0};
    void* s = 0;
    uint64_t raw = 0;
    if (stream_create(&d, &s)) return;
    while (!*(volatile int32_t*)stop) {
        stream_ptr(s, &raw);
        ++*(volatile int64_t*)laps;
    }
    stream_release(s);
}
"""

SEAM_FUNCTIONS = ["stream_create", "stream_ptr", "memcpy", "capturer_create", "capturer_begin", "capturer_end",
                  "captured_release", "capturer_release", "stream_synchronize", "stream_release"]


@pytest.mark.skipif("libasan" in os.environ.get("LD_PRELOAD", ""),
                    reason="AddressSanitizer's allocator (gcc 12's libasan) is not fork-safe: a child may "
                           "find its lock held by the parent's allocating thread")
def test_forks_while_another_thread_is_inside_the_backend_give_working_children():
    # Two streams' workers run C kernels that call the seam in a loop (no GIL: they are inside the
    # backend, holding its locks, most of the time): one makes, captures on and releases streams,
    # one looks a stream up. Meanwhile the main thread forks again and again: no child may find a
    # lock of the backend held by those threads, which the child does not have, and every child's
    # own objects must work.
    res = run_fork_case('''
import ctypes
lib = ctypes.CDLL(cpu.path)
fns = np.array([ctypes.cast(getattr(lib, "eagle_backend_" + name), ctypes.c_void_p).value
                for name in SEAM_FUNCTIONS], dtype=np.uint64)
hm = eagle.compile(HAMMER, backend=cpu, name="hammer.c", cache=False)
stop, laps, looked, buf = np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(16)
hs, ls = cpu.stream(), cpu.stream()
hs.run(hm.hammer, [stop, fns, laps, buf], 1)
ls.run(hm.lookups, [stop, fns, looked], 1)
t0 = time.monotonic()
while (laps[0] < 10 or looked[0] < 10) and time.monotonic() < t0 + 10:
    time.sleep(0.001)
started = int(min(laps[0], looked[0]))

def work():
    s = cpu.stream()
    y = eagle.asarray(np.zeros(8), backend=cpu)
    with cpu.capture(s) as c:
        s.run(mod.axpb, [y, 1.0, 1.0], 8)
    g = cpu.graph_from_captured(c.captured)
    g.set_stream(s)
    launcher = g.launcher()
    launcher.launch(2)
    launcher.synchronize()
    cpu.copy(y, y, stream=0)
    s.copy(y, y)
    s.synchronize()
    return values(y)

got = []
for _ in range(ROUNDS):
    got.append(in_child(work, deadline=10.0))
    time.sleep(0.002)
forked_at = int(min(laps[0], looked[0]))
stop[0] = 1
hs.synchronize()
ls.synchronize()
result = {"children": got, "laps": [started, forked_at]}
''', globals={"HAMMER": HAMMER, "SEAM_FUNCTIONS": SEAM_FUNCTIONS, "ROUNDS": 60})
    assert res["laps"][0] >= 10, f"the hammer did not run: {res['laps']}"
    assert res["laps"][1] > res["laps"][0], f"the hammer stopped while the parent forked: {res['laps']}"
    bad = [r for r in res["children"] if r["status"] != "ok" or r["value"] != [2.0] * 8 or r["exit"] != 0]
    assert not bad, f"{len(bad)} of {len(res['children'])} children failed, the first: {bad[0]}"


def test_the_child_exits_promptly_with_objects_of_the_parent_alive():
    # the child ends through the interpreter's normal exit: finalizers release the parent's streams
    # (one busy and with work queued at the fork), its launcher, fork and its thread's own stream
    res = run_fork_case('''
flag = np.zeros(1, np.int32)
x = eagle.asarray(np.zeros(8), backend=cpu)
eagle.run(mod.axpb, [x, 1.0, 1.0], 8)        # the thread's own stream
s = cpu.stream()
with cpu.capture(s) as cap:
    s.run(mod.axpb, [x, 1.0, 1.0], 8)
g = cpu.graph_from_captured(cap.captured)
g.set_stream(s)
launcher = g.launcher()
origin = cpu.stream()
f = cpu.fork(origin, 2)
s.run(mod.hold, [flag], 1)                   # s's worker is busy at the fork; the replay waits behind
launcher.launch()
pid = os.fork()
if pid == 0:
    # the child: the runner must not report for it; everything stays alive until the exit
    sys.modules["__main__"]._report_path = os.devnull
    fresh = cpu.stream()                     # and a stream of its own, with finished work
    fresh.copy(x, np.full(8, 1.0))
    fresh.synchronize()
else:
    rep = _collect(pid, os.open(os.devnull, os.O_RDONLY), DEADLINE)
    flag[0] = 1
    launcher.synchronize()
    result = {"child": rep, "parent": values(x)}
''')
    rep = res["child"]
    assert rep["status"] != "hung", f"the forked child did not exit within {DEADLINE} s"
    assert rep["exit"] == 0, f"the forked child exited with {rep['exit']}"
    assert rep["wall"] < PROMPT, f"the forked child took {rep['wall']:.1f} s to exit"
    assert res["parent"] == [2.0] * 8  # 1 (eagle.run) + 1 (the replay held at the fork)


@pytest.mark.gpu
def test_cuda_objects_made_before_fork_are_refused_in_the_child_and_new_ones_say_why(cuda):
    # A CUDA context does not survive fork(): the parent's objects are refused by name, and a
    # child forked after the parent used the runtime is told so by every creator (the driver
    # would refuse every call); the parent goes on.
    res = run_fork_case('''
gpu = eagle.backend("cuda")
s = gpu.stream()
x = eagle.zeros(4, backend=gpu)
s.synchronize()

def child_old_stream():
    s.synchronize()
    return "no error"

def child_old_array():
    x.numpy()
    return "no error"

def child_new_stream():
    t = gpu.stream()
    t.synchronize()
    return "no error"

got = {"old": in_child(child_old_stream), "array": in_child(child_old_array), "new": in_child(child_new_stream)}
y = eagle.asarray(np.arange(4.0), backend=gpu)
t = gpu.stream()
t.synchronize()
result = {"pid": os.getpid(), **got, "parent": y.numpy().tolist()}
''')
    assert_refused_naming_fork(res["old"], res["pid"], "synchronize of a cuda stream made before fork")
    for what in ("array", "new"):
        rep = res[what]
        assert rep["status"] == "raised" and rep["eagle"], f"{what}: {rep}"
        assert "fork" in rep["message"] and "spawn" in rep["message"], f"{what}: {rep}"
        assert rep["seconds"] < PROMPT and rep["exit"] == 0, f"{what}: {rep}"
    assert res["parent"] == [0.0, 1.0, 2.0, 3.0]
