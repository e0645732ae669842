"""Sentence coverage of eagle_backend.h: each sentence of the header's comments, with the checks
that cite it (eagle/check/citations.py), so an uncited sentence is visible.

    python -m eagle.check --coverage [--json] [--uncited]

The header is split into anchors -- the declaration a comment stands beside: a function by its
short name (``stream_create``), ``struct <name>``, a macro, ``typedef <name>``, and ``general``
for the comment before the include guard -- and each anchor's comment into sentences. A sentence
is *cited* when the quote of some check's cite overlaps it. A sentence no check cites is listed in
NOT_CHECKED (eagle/check/_uncheckable.py) with why: ``informative`` (it describes and promises
nothing a backend could break: a name, a purpose, what eagle does), ``caller`` (a duty of the
caller, not of the backend), or ``unobservable`` (a promise no outside test can observe, and why).
Anything else is *uncited*: a normative sentence with neither a check nor a reason, which the
coverage test (tests/test_check_coverage.py) refuses."""
import json
import os
import re
import sys
from typing import NamedTuple

_COMMENT = re.compile(r"/\*(.*?)\*/", re.S)
_MARKER = re.compile(r"@eagle\s+group=\S+\s+since=\d+(?:\s+extends=\S+)?")
_NEXT = ((r"#define\s+(\w+)", "{}"), (r"struct eagle_backend_(\w+)\s*\{", "struct {}"),
         (r"\beagle_backend_(\w+)\s*\(", "{}"),
         (r"typedef[^;]*?\beagle_backend_(\w+)\)?(?:\([^;]*\))?\s*;", "typedef {}"))
# A sentence (a clause, after ';') ends at '.', '!' or '?' followed by a space and a capital, a quote, a '*' (a
# dereference like *done), a '(' or a '-'; "e.g." and "i.e." never end one.
_SPLIT = re.compile(r"(?<!e\.g)(?<!i\.e)(?<=[.!?])\s+(?=[A-Z*\"(`\-]|eagle_backend_)|(?<=;)\s+")
# A banner comment line: "==== version ====".
_BANNER = re.compile(r"={8,}[^=]*=*")


def normal(text):
    return " ".join(text.split())


def header_path():
    """The eagle_backend.h beside this package (a checkout) or in the installed kit."""
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for cand in (os.path.join(here, "eagle_backend.h"),
                 os.path.join(here, "eagle", "backend_kit", "include", "eagle_backend.h")):
        if os.path.isfile(cand):
            return cand
    raise FileNotFoundError("eagle_backend.h is neither in this checkout nor in the installed kit")


def header_comments(text):
    """({anchor: its comments joined by a space}, {anchor: [each comment]}): comment leaders,
    @eagle markers and banners removed, whitespace collapsed."""
    out = {}
    structs = [(m.start(), m.end(), "struct " + m.group(1))
               for m in re.finditer(r"struct eagle_backend_(\w+)\s*\{.*?\n\};", text, re.S)]
    guard = text.index("#ifndef EAGLE_BACKEND_H")
    code_only = _COMMENT.sub(lambda m: " " * len(m.group(0)), text)
    for m in _COMMENT.finditer(text):
        body = "\n".join(line.strip().lstrip("*").strip() for line in m.group(1).split("\n"))
        body = normal(_BANNER.sub("", _MARKER.sub("", body)))
        if not body:
            continue
        name = "general" if m.start() < guard else None
        for a, b, struct in structs:
            if a < m.start() < b:
                name = struct
        if name is None:
            rest = code_only[m.end():]
            found = [(mm.start(), fmt.format(mm.group(1)))
                     for rx, fmt in _NEXT for mm in [re.search(rx, rest)] if mm]
            if not found:
                continue
            name = min(found)[1]
        out.setdefault(name, []).append(body)
    return {k: " ".join(v) for k, v in out.items()}, out


class Sentence(NamedTuple):
    anchor: str
    text: str
    start: int   # offset in the anchor's comment
    end: int


def sentences(pieces):
    """Every sentence (or clause after a ';') of every anchor, in header order; each comment of
    an anchor (a struct's field comments) is split on its own. Offsets are in the anchor's
    comments joined with one space (header_comments' first result)."""
    out = []
    for anchor, bodies in pieces.items():
        base = 0
        for text in bodies:
            pos = 0
            for part in _SPLIT.split(text):
                i = text.index(part, pos)
                if part.strip(" -"):
                    out.append(Sentence(anchor, part, base + i, base + i + len(part)))
                pos = i + len(part)
            base += len(text) + 1
    return out


class Row(NamedTuple):
    sentence: Sentence
    checks: tuple        # ids of the checks citing it
    status: str          # 'cited', 'informative', 'caller', 'unobservable', 'uncited'
    why: str = ""


def coverage(header_text=None):
    """One Row per sentence of the header."""
    from ._all import all_checks
    from ._uncheckable import NOT_CHECKED
    from .citations import CITES
    if header_text is None:
        with open(header_path()) as f:
            header_text = f.read()
    comments, pieces = header_comments(header_text)
    ids = {c.id for c in all_checks()}
    spans = {}   # anchor -> [(start, end, check id)]
    for cid, cites in CITES.items():
        if cid not in ids:
            continue
        for c in cites:
            text = comments.get(c.where, "")
            q = normal(c.quote)
            at = text.find(q)
            while at >= 0:
                spans.setdefault(c.where, []).append((at, at + len(q), cid))
                at = text.find(q, at + 1)
    rows = []
    for s in sentences(pieces):
        checks = sorted({cid for a, b, cid in spans.get(s.anchor, ()) if a < s.end and b > s.start})
        if checks:
            rows.append(Row(s, tuple(checks), "cited"))
            continue
        why = _reason(NOT_CHECKED, s)
        if why is None:
            rows.append(Row(s, (), "uncited"))
        else:
            rows.append(Row(s, (), why[0], why[1]))
    return rows


def _reason(table, s):
    for anchor, quote, status, why in table:
        if anchor == s.anchor and (quote == "*" or normal(quote) in s.text):
            return status, why
    return None


def stale_reasons(header_text=None):
    """NOT_CHECKED entries that match no sentence (the header changed, or the entry is wrong)."""
    from ._uncheckable import NOT_CHECKED
    if header_text is None:
        with open(header_path()) as f:
            header_text = f.read()
    sents = sentences(header_comments(header_text)[1])
    return [e for e in NOT_CHECKED
            if not any(s.anchor == e[0] and (e[1] == "*" or normal(e[1]) in s.text) for s in sents)]


def report(rows, only_uncited=False):
    lines, last = [], None
    counts = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
        if only_uncited and r.status != "uncited":
            continue
        if r.sentence.anchor != last:
            lines.append(f"\n[{r.sentence.anchor}]")
            last = r.sentence.anchor
        text = r.sentence.text if len(r.sentence.text) <= 160 else r.sentence.text[:157] + "..."
        if r.status == "cited":
            tag = "cited by " + ", ".join(r.checks)
        elif r.status == "uncited":
            tag = "UNCITED"
        else:
            tag = f"{r.status}: {r.why}"
        lines.append(f"  - {text}\n      {tag}")
    total = len(rows)
    lines.append("\n" + ", ".join(f"{k} {counts.get(k, 0)}" for k in
                                  ("cited", "informative", "caller", "unobservable", "uncited"))
                 + f" of {total} sentences; uncited normative sentences: {counts.get('uncited', 0)}")
    return "\n".join(lines).lstrip("\n")


def to_json(rows):
    return json.dumps([{"anchor": r.sentence.anchor, "sentence": r.sentence.text, "status": r.status,
                        "checks": list(r.checks), "why": r.why} for r in rows], indent=1)


def main(as_json=False, only_uncited=False, out=sys.stdout):
    rows = coverage()
    print(to_json(rows) if as_json else report(rows, only_uncited), file=out)
    return 1 if any(r.status == "uncited" for r in rows) else 0
