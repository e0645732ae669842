"""Output of python -m eagle.check: a readable table, JSON, JUnit XML."""
import json
from xml.etree import ElementTree as ET

from ._registry import FAILING, GROUP_ORDER, RESULTS

_HEAD = ("pass", "fail", "advice", "skip", "n/s", "crash", "timeout")


def counts(results):
    out = dict.fromkeys(RESULTS, 0)
    for r in results:
        out[r.result] += 1
    return out


def table(runs, verbose=False):
    """runs: list of (path, info dict, results). One line per group, failures and advice listed
    under it (advice never makes the group FAIL)."""
    lines = []
    for path, info, results in runs:
        lines.append(f"eagle.check {path}")
        if info:
            lines.append("  " + ", ".join(f"{k} {v}" for k, v in info.items()))
        lines.append(f"  {'group':<24}" + "".join(f"{h:>8}" for h in _HEAD))
        groups = [g for g in GROUP_ORDER if any(r.group == g for r in results)]
        for g in groups:
            rs = [r for r in results if r.group == g]
            c = counts(rs)
            mark = "FAIL" if any(r.result in FAILING for r in rs) else "ok"
            lines.append(f"  {g:<24}" + "".join(f"{c[k]:>8}" for k in RESULTS) + f"   {mark}")
            for r in rs:
                if r.result in FAILING or r.result == "advice" or (verbose and r.result != "pass"):
                    lines.append(f"      {r.result.upper():<8} {r.id}: {r.message}")
        c = counts(results)
        lines.append(f"  total: {c['pass']} passed, {c['fail']} failed, {c['advice']} advice, "
                     f"{c['crash']} crashed, {c['timeout']} timed out, {c['skip']} skipped, "
                     f"{c['not_supported']} not supported")
        reasons = {}
        for r in results:
            if r.result == "skip":
                reasons[r.message] = reasons.get(r.message, 0) + 1
        for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
            lines.append(f"  skipped {n}: {why}")
        lines.append("")
    return "\n".join(lines)


def _json_entry(path, info, results):
    return {"backend": path, **({"info": info} if info else {}), "summary": counts(results),
            "results": [r.to_json() for r in results]}


def to_json(runs):
    """A JSON list, one object per library: backend (its path), info (when any), summary (the
    count of each result), results (one object per check, with the header sentences it cites)."""
    return json.dumps([_json_entry(*run) for run in runs], indent=1)


def not_loaded_json(library, error):
    """The document of to_json for a run that checked nothing: one object for ``library`` (its
    path, the kind as named, or None when none was named), every count 0, no results, and
    ``error`` saying why it could not be found or loaded."""
    return json.dumps([{**_json_entry(library, {}, []), "error": error}], indent=1)


def junit(runs, filename):
    """JUnit XML. ``advice`` is a passed test case that carries the advice as a property
    (name "advice") and in its system-out: CI shows it without failing the build."""
    suites = ET.Element("testsuites", name="eagle.check")
    for path, _info, results in runs:
        c = counts(results)
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(results)),
                              failures=str(c["fail"]), errors=str(c["crash"] + c["timeout"]),
                              skipped=str(c["skip"] + c["not_supported"]))
        for r in results:
            case = ET.SubElement(suite, "testcase", classname=r.group, name=r.id,
                                 time=f"{r.duration_s:.3f}")
            if r.result == "fail":
                ET.SubElement(case, "failure", message=r.message, type="fail").text = r.message
            elif r.result in ("crash", "timeout"):
                ET.SubElement(case, "error", message=r.message, type=r.result).text = r.message
            elif r.result in ("skip", "not_supported"):
                ET.SubElement(case, "skipped", message=f"{r.result}: {r.message}")
            elif r.result == "advice":
                props = ET.SubElement(case, "properties")
                ET.SubElement(props, "property", name="advice", value=r.message)
                ET.SubElement(case, "system-out").text = r.message
    ET.ElementTree(suites).write(filename, encoding="utf-8", xml_declaration=True)
