"""What `import eagle` adds to interpreter start-up (goal: <= 20 ms).

Runs `python -c pass` and `python -c "import eagle"` as fresh processes, interleaved, and reports
the medians and their difference; then `-X importtime` for eagle's own modules. Also times the first
use (`eagle.backend('cpu')`, which loads cffi, numpy-free) separately, since importing eagle loads
nothing but the package and its exceptions.

    python benchmarks/bench_import.py [--runs 41]
"""
import argparse
import statistics
import subprocess
import sys
import time

from _machine import header


def wall(code, runs):
    """Median wall-clock seconds of `python -c code` as a fresh process."""
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        out.append(time.perf_counter() - t0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=41)
    args = ap.parse_args()
    cases = {"pass": "pass", "import eagle": "import eagle",
             "import eagle; eagle.backend('cpu')": "import eagle; eagle.backend('cpu')"}
    samples = {k: [] for k in cases}
    for _ in range(3):  # warm the page cache
        for code in cases.values():
            subprocess.run([sys.executable, "-c", code], check=True)
    for i in range(args.runs):  # interleaved, rotating order
        names = list(cases)
        names = names[i % 3:] + names[:i % 3]
        for k in names:
            samples[k].extend(wall(cases[k], 1))
    med = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
    header("EAGLE_BACKEND_CPU", "PYTHONPATH")
    print(f"runs:    {args.runs} fresh processes per case, interleaved; median wall clock\n")
    print(f"{'case':<48}{'median ms':>12}{'added ms':>12}")
    for k in cases:
        print(f"{'python -c ' + repr(cases[k]):<48}{med[k]:>12.1f}{med[k] - med['pass']:>12.1f}")
    # -X importtime: eagle's own modules (cumulative microseconds)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", "import eagle"], capture_output=True,
                          text=True, check=True)
    rows = [ln for ln in proc.stderr.splitlines() if "eagle" in ln]
    print("\n-X importtime (self us | cumulative us | module), eagle's modules:")
    for ln in rows:
        print("   " + ln.split(":", 1)[1].strip())
    added = med["import eagle"] - med["pass"]
    print(f"\nimport eagle adds {added:.1f} ms (goal <= 20 ms): {'met' if added <= 20 else 'MISSED'}")


if __name__ == "__main__":
    main()
