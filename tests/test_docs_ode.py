"""docs/ode.md: its ```python blocks run, in order, in one namespace, on the cpu backend.

Blocks fenced ```python scaled are the large-N ones: they run too, with their `N = 1_000_000`
line replaced by a small N (the rest of the doc then goes on with those arrays). Blocks fenced
```python cuda need a GPU and are not run here."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "ode.md")
SMALL_N = 2000
BIG_N = re.compile(r"^N = 1_000_000$", re.M)


def _blocks(text):
    """(info string, code) of every fenced block."""
    return [(m.group(1).strip(), m.group(2)) for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.S | re.M)]


def test_the_ode_doc_has_cpu_scaled_and_cuda_blocks():
    blocks = _blocks(open(DOC).read())
    infos = [info for info, _ in blocks]
    assert infos.count("python") >= 8 and "python cuda" in infos and "python scaled" in infos
    for info, code in blocks:
        if info == "python scaled":
            assert len(BIG_N.findall(code)) == 1, "a scaled block sets N = 1_000_000 on one line of its own"


@pytest.mark.slow  # about 12 s: every solve of the doc
def test_the_ode_docs_python_blocks_run_on_cpu(cpu, capsys):
    pytest.importorskip("eagle.ode", reason="eagle.ode is not in this checkout")
    ns = {}
    ran = 0
    for info, code in _blocks(open(DOC).read()):
        if info not in ("python", "python scaled"):
            continue
        if info == "python scaled":
            code = BIG_N.sub(f"N = {SMALL_N}", code)
        exec(compile(code, f"{DOC}:block{ran}", "exec"), ns)  # noqa: S102 - the doc's own code
        ran += 1
    assert ran >= 10
    out = capsys.readouterr().out
    assert "(1000, 3)" in out and f"{SMALL_N} trajectories" in out and "(100, 3, 11)" in out and "float32" in out
