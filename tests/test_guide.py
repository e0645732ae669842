"""docs/guide.md: its ```python blocks run, in order, in one namespace, on the cpu backend.
Blocks fenced ```python cuda need a GPU and are not run here."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GUIDE = os.path.join(ROOT, "docs", "guide.md")


def _blocks(text):
    """(info string, code) of every fenced block."""
    return [(m.group(1).strip(), m.group(2)) for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.S | re.M)]


def test_the_guide_has_cpu_and_gpu_blocks():
    infos = [info for info, _ in _blocks(open(GUIDE).read())]
    assert infos.count("python") >= 8 and "python cuda" in infos


def test_the_guides_python_blocks_run_on_cpu(cpu):
    ns = {}
    ran = 0
    for info, code in _blocks(open(GUIDE).read()):
        if info != "python":
            continue
        exec(compile(code, f"{GUIDE}:block{ran}", "exec"), ns)  # noqa: S102 - the guide's own code
        ran += 1
    assert ran >= 8


def test_the_readme_taste_runs_on_cpu(cpu, capsys):
    blocks = [code for info, code in _blocks(open(os.path.join(ROOT, "README.md")).read()) if info == "python"]
    assert blocks
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})  # noqa: S102
    assert "[2. 3. 4. 5. 6. 7. 8. 9.]" in capsys.readouterr().out
