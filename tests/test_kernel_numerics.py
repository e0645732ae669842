"""<eagle/kernel.h> gives every kind the same C numerics vocabulary (eagle/include/eagle/numerics.h).

tests/c/numerics_corpus.c uses every name of the list (INFINITY, NAN, HUGE_VAL(F), the M_ constants,
isnan/isinf/isfinite/signbit, fmin/fmax/fabs/copysign/nextafter/fma/fmod/trunc/round and their f
versions, DBL_/FLT_ limits, the <stdint.h> types and limits, bool, size_t, NULL). Here it is
compiled through eagle.compile on cpu and run against independent references (exact rational
arithmetic with fractions, mpmath for the constants, numpy's IEEE arithmetic), compiled
for cuda by NVRTC with no GPU, and, on a device kind (cuda on a GPU, opencl on PoCL), run and
compared with cpu bit for bit in exact mode for the operations IEEE 754 rounds correctly."""
import math
import os
from fractions import Fraction

import numpy as np
import pytest

import eagle
from _nvrtc import BIT_EXACT, MODES, nvrtc_compile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "c", "numerics_corpus.c")
KERNELS = ["numerics_d", "numerics_f", "numerics_consts"]
D_RESULTS, F_RESULTS = 25, 17
EXACT = {"exact": True}  # eagle.compile's bit-exact mode

# ------------------------------------------------------------------------------ inputs

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999999999999994, 3.0, -7.0, 7.5,
           4503599627370497.0, 1e308, -1e308, 5e-324, -5e-324, 2.2250738585072014e-308, math.pi,
           math.inf, -math.inf, math.nan]


def inputs(dtype, seed=7):
    """(a, b, c): every pair of special values, then random values over many binades."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):  # 1e308 is an infinity in float
        special = np.array(SPECIAL, dtype=np.float64).astype(dtype)
    x, y = np.meshgrid(special, special, indexing="ij")
    lim = 300 if dtype == np.float64 else 35
    m = 1500
    rx = rng.standard_normal(m) * 10.0 ** rng.integers(-lim, lim, m)
    ry = rng.standard_normal(m) * 10.0 ** rng.integers(-lim, lim, m)
    near = rng.standard_normal(m)  # a second set where products and sums are of similar size
    a = np.concatenate([x.ravel(), rx, near]).astype(dtype)
    b = np.concatenate([y.ravel(), ry, near * 3.0 + 1.0]).astype(dtype)
    c = np.concatenate([np.resize(special, x.size), rng.standard_normal(m) * 10.0 ** rng.integers(-lim, lim, m),
                        -(near * (near * 3.0 + 1.0))]).astype(dtype)
    return a, b, c


# ------------------------------------------------------------------------------ references

def _bits_dtype(dtype):
    return np.uint64 if dtype == np.float64 else np.uint32


def nextafter_ref(x, y, dtype):
    """C nextafter from the bit pattern: the neighbour of x towards y."""
    x, y = dtype(x), dtype(y)
    if math.isnan(x) or math.isnan(y):
        return dtype(math.nan)
    if x == y:
        return y
    u = _bits_dtype(dtype)
    if x == 0:
        tiny = np.array([1], dtype=u).view(dtype)[0]
        return tiny if y > 0 else -tiny
    bits = int(np.array([x], dtype=dtype).view(u)[0])
    bits += 1 if (x < y) == (x > 0) else -1
    return np.array([bits], dtype=u).view(dtype)[0]


def round_fraction(fr, dtype):
    """The value of dtype nearest the rational fr (ties to even), or a signed infinity."""
    info = np.finfo(dtype)
    mant = info.nmant + 1
    top = Fraction(2) ** (info.maxexp) - Fraction(2) ** (info.maxexp - mant - 1)  # halfway past MAX
    if abs(fr) >= top:
        return dtype(math.inf if fr > 0 else -math.inf)
    if fr == 0:
        return dtype(0.0)
    try:
        with np.errstate(over="ignore"):
            c = dtype(float(fr))
    except OverflowError:  # past DBL_MAX but below the halfway point: DBL_MAX is nearest
        c = dtype(info.max if fr > 0 else -info.max)
    if not math.isfinite(c):  # a float32 past FLT_MAX, below the halfway point
        c = dtype(info.max if fr > 0 else -info.max)
    best = None
    for cand in (nextafter_ref(c, -math.inf, dtype), c, nextafter_ref(c, math.inf, dtype)):
        if not math.isfinite(cand):
            continue
        d = abs(Fraction(float(cand)) - fr)
        even = int(np.array([cand], dtype=dtype).view(_bits_dtype(dtype))[0]) % 2 == 0
        key = (d, not even)
        if best is None or key < best[0]:
            best = (key, cand)
    return best[1]


def fma_ref(x, y, z, dtype):
    if all(math.isfinite(v) for v in (x, y, z)):
        exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
        r = round_fraction(exact, dtype)
        if r == 0:  # the sign of an exact zero: +0 unless both parts are -0 (round to nearest)
            sign_p = math.copysign(1.0, x) * math.copysign(1.0, y)
            if exact == 0 and sign_p < 0 and math.copysign(1.0, z) < 0:
                return dtype(-0.0)
            if exact != 0:
                return dtype(math.copysign(0.0, exact))
            return dtype(0.0)
        return r
    with np.errstate(all="ignore"):  # a non-finite result does not depend on the rounding
        return dtype(np.float64(x) * np.float64(y) + np.float64(z))


def fmod_ref(x, y, dtype):
    if math.isnan(x) or math.isnan(y) or math.isinf(x) or y == 0:
        return dtype(math.nan)
    if math.isinf(y):
        return dtype(x)
    fx, fy = Fraction(float(x)), Fraction(float(y))
    r = fx - int(fx / fy) * fy  # int() truncates towards zero: exact, as C's fmod
    return dtype(math.copysign(float(r), x))


def integral_ref(x, how, dtype):
    """trunc / round (half away from zero) / floor / ceil, with the sign of x kept on a zero."""
    if not math.isfinite(x):
        return dtype(x)
    fx = Fraction(float(x))
    if how == "round":  # halves away from zero
        v = math.floor(abs(fx) + Fraction(1, 2)) * (1 if fx >= 0 else -1)
    else:
        v = {"trunc": int(fx), "floor": math.floor(fx), "ceil": math.ceil(fx)}[how]
    return dtype(math.copysign(float(v), x))


def clipped_step_ref(x, y):
    t = abs(x)
    t_end = t + 1.0
    min_h = 16.0 * (float(nextafter_ref(t, math.inf, np.float64)) - t)
    h = y
    if math.isnan(h) or h <= 0.0:
        h = min_h
    h = max(h, min_h) if not math.isnan(min_h) else (h if not math.isnan(h) else min_h)
    if t + h > t_end:
        h = t_end - t
    return h


def reference(a, b, c, dtype):
    """[(result name, expected array)] in the corpus's order, for the double or float kernel."""
    n = a.size
    with np.errstate(all="ignore"):
        cols = {
            "fmin": np.fmin(a, b), "fmax": np.fmax(a, b), "fabs": np.abs(a), "copysign": np.copysign(a, b),
            "nextafter": np.array([nextafter_ref(a[i], b[i], dtype) for i in range(n)], dtype=dtype),
            "fma": np.array([fma_ref(a[i], b[i], c[i], dtype) for i in range(n)], dtype=dtype),
            "fmod": np.array([fmod_ref(a[i], b[i], dtype) for i in range(n)], dtype=dtype),
            "trunc": np.array([integral_ref(v, "trunc", dtype) for v in a], dtype=dtype),
            "round": np.array([integral_ref(v, "round", dtype) for v in a], dtype=dtype),
            "isnan": np.array([math.isnan(v) for v in a], dtype=dtype),
            "isinf": np.array([math.isinf(v) for v in a], dtype=dtype),
            "isfinite": np.array([math.isfinite(v) for v in a], dtype=dtype),
            "signbit": np.array([math.copysign(1.0, v) < 0 for v in a], dtype=dtype),
            "div": a / b,
            "sqrt": np.sqrt(a),
            "mul": a * b, "add": a + b, "sub": a - b,
            "floor": np.array([integral_ref(v, "floor", dtype) for v in a], dtype=dtype),
            "ceil": np.array([integral_ref(v, "ceil", dtype) for v in a], dtype=dtype),
            "mul_add": a * b + c,  # numpy rounds twice: what exact mode promises
        }
    if dtype == np.float64:
        cols["clipped_step"] = np.array([clipped_step_ref(a[i], b[i]) for i in range(n)])
        with np.errstate(all="ignore"):
            xf = np.array([fmod_ref(v, 1000.0, np.float64) for v in a]).astype(np.float32).astype(np.float64)
            af = np.array([fmod_ref(abs(v), 1000.0, np.float64) for v in a]).astype(np.float32).astype(np.float64)
            cols["nextafter_of_float"] = np.array([nextafter_ref(v, math.inf, np.float64) for v in xf])
            cols["sqrt_of_float"] = np.sqrt(af)
            cols["fmax_of_int"] = np.fmax(a, 0.0)
        order = ["fmin", "fmax", "fabs", "copysign", "nextafter", "fma", "fmod", "trunc", "round", "isnan",
                 "isinf", "isfinite", "signbit", "div", "sqrt", "mul", "add", "sub", "floor", "ceil", "mul_add",
                 "clipped_step", "nextafter_of_float", "sqrt_of_float", "fmax_of_int"]
    else:
        order = ["fmin", "fmax", "fabs", "copysign", "nextafter", "fma", "fmod", "trunc", "round", "isnan",
                 "isinf", "isfinite", "signbit", "div", "mul", "add", "mul_add"]
    return [(k, cols[k]) for k in order]


# Results whose zero sign C leaves open (fmin(-0, +0) may be either zero): compared as values.
VALUE_ONLY = {"fmin", "fmax"}


def same(got, want, name):
    """Bit for bit, every NaN counting as the same NaN (their payloads are not C's promise)."""
    nan = np.isnan(got) & np.isnan(want)
    if name in VALUE_ONLY:
        return (got == want) | nan
    u = _bits_dtype(got.dtype.type)
    return (got.view(u) == want.view(u)) | nan


def assert_matches(got, ref, a, b, c, what):
    for k, (name, want) in enumerate(ref):
        ok = same(got[k], want, name)
        if not ok.all():
            j = int(np.flatnonzero(~ok)[0])
            raise AssertionError(f"{what}: {name}({a[j]!r}, {b[j]!r}, {c[j]!r}) = {got[k][j]!r}, expected "
                                 f"{want[j]!r} ({int((~ok).sum())} of {ok.size} differ)")


# ------------------------------------------------------------------------------ running the corpus

def run_corpus(backend, **mode):
    """(double results (D_RESULTS, n), float results (F_RESULTS, n), constants) on ``backend``."""
    mod = eagle.compile(CORPUS, backend=backend, kernels=KERNELS, **mode)
    out = {}
    for dtype, kname, count in ((np.float64, "numerics_d", D_RESULTS), (np.float32, "numerics_f", F_RESULTS)):
        a, b, c = inputs(dtype)
        dev = [backend.asarray(v) for v in (a, b, c)]
        res = backend.zeros((count, a.size), dtype=dtype)
        eagle.run(mod[kname], dev + [res], a.size)
        out[dtype] = np.from_dlpack(res) if backend.kind == "cpu" else res.numpy()
    d, f, u = backend.zeros(64, "float64"), backend.zeros(16, "float32"), backend.zeros(128, "uint64")
    eagle.run(mod.numerics_consts, [d, f, u], 1)
    host = [np.from_dlpack(x) if backend.kind == "cpu" else x.numpy() for x in (d, f, u)]
    return out[np.float64], out[np.float32], host


@pytest.fixture(scope="module")
def cpu_results(cpu):
    return run_corpus(cpu, **EXACT)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["double", "float"])
def test_the_corpus_on_cpu_matches_exact_references(cpu_results, dtype):
    got = cpu_results[0] if dtype == np.float64 else cpu_results[1]
    a, b, c = inputs(dtype)
    assert_matches(got, reference(a, b, c, dtype), a, b, c, f"cpu {dtype.__name__}")


def expected_constants():
    """(doubles, floats, integers) the corpus's constants kernel must write, from independent sources."""
    import mpmath
    mpmath.mp.prec = 256
    mp = mpmath.mp
    d = [math.inf, -math.inf, math.nan, math.inf, math.inf,
         float(mp.e), float(1 / mp.log(2)), float(1 / mp.log(10)), float(mp.log(2)), float(mp.log(10)),
         float(mp.pi), float(mp.pi / 2), float(mp.pi / 4), float(1 / mp.pi), float(2 / mp.pi),
         float(2 / mp.sqrt(mp.pi)), float(mp.sqrt(2)), float(1 / mp.sqrt(2)),
         2.0 ** -52, float(2 ** 1024 - 2 ** 971), 2.0 ** -1022, 2.0 ** -1074,
         2.0 ** -23, float(2 ** 128 - 2 ** 104), 2.0 ** -126, 2.0 ** -149]
    f = np.array([math.inf, math.nan, math.inf, 2.0 ** -23, float(2 ** 128 - 2 ** 104), 2.0 ** -126, 2.0 ** -149],
                 dtype=np.float32)

    def u(v):
        return v % 2 ** 64

    ints = [u(-128), 127, 255, u(-32768), 32767, 65535, u(-2 ** 31), 2 ** 31 - 1, 2 ** 32 - 1,
            u(-2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1, u(-2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1,
            u(-2 ** 63), 2 ** 63 - 1, 2 ** 64 - 1, 2 ** 64 - 1, u(-2 ** 63), 2 ** 63 - 1,
            u(-5000000000), 18000000000000000000, 4000000000,
            4, 4, 8, 4, 8, 4, 8, 4, 8, 4, 8,  # sizeof INFINITY NAN HUGE_VAL HUGE_VALF M_PI FLT_MAX DBL_MAX ...
            1, 1, 2, 2, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 1,  # int8_t .. bool
            0, 1, 0, 1, 1, 0, 8, 2,
            53, 15, 17, u(-1021), 1024, u(-307), 308, 24, 6, 9, u(-125), 128, u(-37), 38, 2]
    return np.array(d), f, np.array(ints, dtype=np.uint64)


def assert_constants(host, what):
    d, f, ints = expected_constants()
    got_d, got_f, got_u = host
    assert same(got_d[:d.size], d, "const").all(), (what, got_d[:d.size], d)
    assert same(got_f[:f.size], f, "const").all(), (what, got_f[:f.size], f)
    assert np.array_equal(got_u[:ints.size], ints), (what, np.flatnonzero(got_u[:ints.size] != ints))
    assert got_u[ints.size:].sum() == 0  # the list is no longer than the corpus writes
    # NAN is the positive quiet NaN, HUGE_VAL an infinity, on every kind
    assert got_d[2:3].view(np.uint64)[0] == 0x7FF8000000000000
    assert got_f[1:2].view(np.uint32)[0] == 0x7FC00000


def test_the_constants_on_cpu_have_c_values_and_types(cpu_results):
    assert_constants(cpu_results[2], "cpu")


def test_a_strict_c11_compile_gets_the_m_constants_from_eagle(cpu):
    """glibc hides M_PI and friends under -std=c11; numerics.h then defines them itself."""
    bare = "#include <math.h>\ndouble pi(void) { return M_PI; }\n"
    with pytest.raises(eagle.CompileError, match="M_PI"):
        eagle.compile(bare, backend=cpu, options=["-std=c11"], cache=False)
    assert_constants(run_corpus(cpu, options=["-std=c11"], **EXACT)[2], "cpu -std=c11")


# ------------------------------------------------------------------------------ the floating-point modes

def host_has_fma():
    """Whether this host's CPU has fused multiply-add instructions (the cpu kind's default mode
    then contracts): x86 says so in /proc/cpuinfo's flags; aarch64, ppc64le and riscv64 have FMA
    in their baseline."""
    import platform
    if platform.machine() not in ("x86_64", "AMD64", "i386", "i686"):
        return True
    with open("/proc/cpuinfo") as fh:
        for line in fh:
            if line.startswith("flags"):
                return "fma" in line.split(":", 1)[1].split()
    return False


def mul_add_inputs(m=1000, seed=3):
    """a, b, c with c = -fl(a*b): rounding the product first gives 0, a fused multiply-add gives
    the product's rounding error, so the two results differ at almost every sample."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(m), rng.standard_normal(m)
    return a, b, -(a * b)


# One multiply-add alone: two roundings when compiled exact, one (a fused multiply-add) where the
# default mode contracts it.
MUL_ADD = (b"#include <eagle/kernel.h>\nEAGLE_KERNEL(mul_add, (const double*, a), (const double*, b), "
           b"(const double*, c), (double*, out)) { (void)n; out[i] = a[i] * b[i] + c[i]; }\n")


def run_mul_add(backend, **mode):
    a, b, c = mul_add_inputs()
    mod = eagle.compile(MUL_ADD, backend=backend, name="mul_add.c", **mode)
    dev = [backend.asarray(v) for v in (a, b, c)] + [backend.zeros(a.size)]
    eagle.run(mod.mul_add, dev, a.size)
    return np.from_dlpack(dev[3]) if backend.kind == "cpu" else dev[3].numpy()


def mul_add_references():
    a, b, c = mul_add_inputs()
    fused = np.array([fma_ref(a[i], b[i], c[i], np.float64) for i in range(a.size)])
    rounded_twice = a * b + c
    assert (fused != rounded_twice).mean() > 0.9  # the inputs tell the two apart
    return fused, rounded_twice


@pytest.mark.slow  # about 6 s: three compiles of the corpus
def test_exact_rounds_each_operation_and_the_default_fuses_where_the_cpu_has_fma(cpu):
    fused, twice = mul_add_references()
    assert np.array_equal(run_mul_add(cpu, exact=True), twice)
    assert np.array_equal(run_mul_add(cpu), fused if host_has_fma() else twice)
    fast = run_mul_add(cpu, fast_math=True)
    assert np.all((fast == fused) | (fast == twice))


# ------------------------------------------------------------------------------ cuda: NVRTC, no GPU

def test_nvrtc_options_of_each_mode_are_the_cuda_backends():
    """tests/_nvrtc.py's option lists are what backends/cuda/native.cpp passes in each mode."""
    with open(os.path.join(ROOT, "backends", "cuda", "native.cpp")) as fh:
        native = fh.read()
    for mode, opts in MODES.items():
        spelled = ", ".join(f'"{o}"' for o in opts[2:])
        assert spelled in native or (mode == "fast" and '"--use_fast_math"' in native), (mode, spelled)


@pytest.mark.parametrize("mode", ["exact", "default", "fast"])
def test_nvrtc_contracts_the_multiply_add_in_the_default_mode_only(mode):
    """In the PTX of MUL_ADD: exact keeps mul.rn + add.rn (.rn forbids ptxas fusing them); the
    default and fast modes fuse them into fma.rn.f64."""
    res, log, ptx = nvrtc_compile(MUL_ADD, "mul_add.c", MODES[mode], output="PTX")
    assert res == 0, log
    text = ptx.decode(errors="replace")
    if mode == "exact":
        assert "fma.rn.f64" not in text and "mul.rn.f64" in text and "add.rn.f64" in text, text
    else:
        assert "fma.rn.f64" in text, text


@pytest.mark.slow  # 3-5 s a mode: NVRTC
@pytest.mark.parametrize("mode", ["exact", "default", "fast"])
def test_the_corpus_compiles_for_cuda_with_nvrtc_and_no_gpu(mode):
    with open(CORPUS, "rb") as fh:
        src = fh.read()
    res, log, cubin = nvrtc_compile(src, "numerics_corpus.c", MODES[mode])
    assert res == 0, log
    assert "warning" not in log, log
    for k in KERNELS:
        assert k.encode() + b"\x00" in cubin


def test_nvrtc_alone_lacks_the_names_so_the_header_is_what_provides_them():
    """Without <eagle/kernel.h> NVRTC refuses INFINITY and the rest: the test above is not vacuous."""
    res, log, _ = nvrtc_compile(b"__global__ void k(double* o) { o[0] = INFINITY + M_PI + DBL_EPSILON; }",
                                "bare.cu", BIT_EXACT)
    assert res != 0 and 'identifier "INFINITY" is undefined' in log


# ------------------------------------------------------------------------------ on a device kind (cuda, opencl)

def test_the_corpus_on_a_device_kind_equals_cpu_bit_for_bit_in_exact_mode(device, cpu_results):
    gd, gf, gconst = run_corpus(device, **EXACT)
    for dtype, got, want in ((np.float64, gd, cpu_results[0]), (np.float32, gf, cpu_results[1])):
        a, b, c = inputs(dtype)
        ref = reference(a, b, c, dtype)
        assert_matches(got, ref, a, b, c, f"{device.kind} {dtype.__name__}")
        assert_matches(got, [(name, want[k]) for k, (name, _) in enumerate(ref)], a, b, c,
                       f"{device.kind} vs cpu {dtype.__name__}")
    assert_constants(gconst, device.kind)


def test_a_device_kind_fuses_the_multiply_add_by_default_and_not_when_exact(device):
    """cuda: NVRTC's --fmad=true; opencl: OpenCL C's FP_CONTRACT ON, fused where the device has a
    fused multiply-add (every GPU; PoCL where the host CPU has FMA instructions)."""
    if device.kind == "opencl" and not host_has_fma():  # the host of every GPU has FMA: PoCL's case
        pytest.skip("this host CPU has no FMA instructions: OpenCL on it (PoCL) has nothing to contract into")
    fused, twice = mul_add_references()
    assert np.array_equal(run_mul_add(device, exact=True), twice)
    assert np.array_equal(run_mul_add(device), fused)
