"""Every check of eagle.check cites the sentences of eagle_backend.h it enforces, and every cited
sentence is in the header as quoted, beside the declaration named, with the minor it states.

The header is parsed here, independently of the checker: each comment belongs to the declaration
that follows it (a function by its short name, `struct <name>`, a macro, `typedef <name>`), a
comment inside a struct to that struct, and the comment before the include guard to `general`."""
import os
import re

import pytest

from eagle.check._all import all_checks
from eagle.check.citations import CITES, Cite, since_of

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(REPO, "eagle_backend.h")
_COMMENT = re.compile(r"/\*(.*?)\*/", re.S)
_MARKER = re.compile(r"@eagle\s+group=\S+\s+since=\d+(?:\s+extends=\S+)?")
_NEXT = ((r"#define\s+(\w+)", "{}"), (r"struct eagle_backend_(\w+)\s*\{", "struct {}"),
         (r"\beagle_backend_(\w+)\s*\(", "{}"),
         (r"typedef[^;]*?\beagle_backend_(\w+)\)?(?:\([^;]*\))?\s*;", "typedef {}"))


def _normal(text):
    return " ".join(text.split())


def header_comments(text):
    """{anchor: the anchor's comments, comment leaders and @eagle markers removed, whitespace
    collapsed}."""
    out = {}
    structs = [(m.start(), m.end(), "struct " + m.group(1))
               for m in re.finditer(r"struct eagle_backend_(\w+)\s*\{.*?\n\};", text, re.S)]
    guard = text.index("#ifndef EAGLE_BACKEND_H")
    code_only = _COMMENT.sub(lambda m: " " * len(m.group(0)), text)
    for m in _COMMENT.finditer(text):
        body = "\n".join(line.strip().lstrip("*").strip() for line in m.group(1).split("\n"))
        body = _normal(_MARKER.sub("", body))
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
        out[name] = (out.get(name, "") + " " + body).strip()
    return out


@pytest.fixture(scope="module")
def comments():
    with open(HEADER) as f:
        return header_comments(f.read())


def _sentence(text, quote):
    """The sentence(s) of `text` that hold `quote`: from the '. ' before it to the '. ' after it."""
    i = text.index(quote)
    start = text.rfind(". ", 0, i)
    end = text.find(". ", i + len(quote.rstrip(".")))
    return text[start + 2 if start >= 0 else 0:end if end >= 0 else len(text)]


def test_the_parser_finds_the_declarations_the_cites_name(comments):
    # a parser that found nothing would let every cite "pass" by being skipped
    for name in ("general", "stream_create", "struct conditional_desc", "EAGLE_BACKEND_BAD_HANDLE", "mem_free"):
        assert name in comments
    assert "Waits for the stream's work, then destroys it." in comments["stream_release"]
    assert "NULL-safe" not in comments["stream_create"]


def test_every_check_cites_something():
    uncited = [c.id for c in all_checks() if not c.cites]
    assert uncited == [], "checks that cite no header sentence (add them to eagle/check/citations.py)"


def test_every_cited_check_exists():
    registered = {c.id for c in all_checks()}
    assert sorted(set(CITES) - registered) == []


def _all_cites():
    return [(cid, c) for cid, cites in sorted(CITES.items()) for c in cites]


@pytest.mark.parametrize("check_id, cite", _all_cites(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_cited_sentence_is_in_the_header(comments, check_id, cite):
    assert isinstance(cite, Cite)
    assert cite.where in comments, f"{check_id} cites {cite.where!r}, which the header does not declare"
    text, quote = comments[cite.where], _normal(cite.quote)
    assert quote in text, f"{check_id}: {quote!r} is not in the comment of {cite.where}: {text!r}"
    said = re.findall(r"since minor (\d+)", _sentence(text, quote))
    want = [str(cite.since)] if cite.since else []
    assert said == want, (f"{check_id}: the sentence of {quote!r} says since minor {said or 'none'}, "
                          f"the cite says since {cite.since}")


def test_a_rule_of_a_later_minor_is_applied_from_that_minor():
    assert since_of("stream.default_stream_order") == 8
    assert since_of("stream.order") == 0


def test_a_quote_that_is_not_in_the_header_is_caught(comments):
    # the test above must be able to fail: a rule the header does not state is not found
    text = comments["stream_ptr"]
    assert _normal("BAD_HANDLE for a released stream") not in text
    assert "BAD_HANDLE" not in comments["stream_synchronize"]


def test_advice_checks_cite_the_sentence_they_start_from():
    advice = {c.id for c in all_checks() if c.advice}
    assert {"stream.bad_handle", "launcher.bad_handle", "static.needed"} <= advice
    for cid in advice:
        assert CITES[cid]
