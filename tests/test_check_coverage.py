"""`python -m eagle.check --coverage`: every sentence of eagle_backend.h is cited by a check or
stated, with why, as informative, a caller's duty or unobservable (eagle/check/_uncheckable.py);
a normative sentence with neither is listed as UNCITED and fails this test."""
import json
import os
import subprocess
import sys

from eagle.check import coverage

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_no_normative_sentence_is_uncited():
    rows = coverage.coverage()
    uncited = [f"[{r.sentence.anchor}] {r.sentence.text}" for r in rows if r.status == "uncited"]
    assert uncited == [], "sentences of eagle_backend.h no check cites and no reason covers:\n" + "\n".join(uncited)
    assert sum(r.status == "cited" for r in rows) > 150


def test_every_reason_matches_a_sentence():
    assert coverage.stale_reasons() == []


def test_a_new_sentence_shows_up_uncited():
    # the listing must be able to fail: a sentence added to the header, cited by nothing, is UNCITED
    with open(coverage.header_path()) as f:
        text = f.read()
    marker = "Never fails. */"
    assert marker in text
    added = text.replace(marker, "Never fails. It also never sleeps longer than a tick. */", 1)
    rows = coverage.coverage(added)
    assert [r.sentence.text for r in rows if r.status == "uncited"] == ["It also never sleeps longer than a tick."]


def test_sentences_are_split_at_clauses_and_field_comments():
    _joined, pieces = coverage.header_comments("/* g */\n#ifndef EAGLE_BACKEND_H\n"
                                               "/* @eagle group=required since=0\n * A does x; B does y. C (e.g. z). */\n"
                                               "int eagle_backend_f(void);\n")
    got = [s.text for s in coverage.sentences(pieces) if s.anchor == "f"]
    assert got == ["A does x;", "B does y.", "C (e.g. z)."]


def test_cli_lists_sentences_with_their_checks():
    proc = subprocess.run([sys.executable, "-m", "eagle.check", "--coverage", "--json"], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads(proc.stdout)
    by = {(r["anchor"], r["sentence"]): r for r in rows}
    hit = [r for (a, s), r in by.items() if a == "memcpy" and "captured as a copy node" in s]
    assert hit and "memcpy.captured_as_node" in hit[0]["checks"]
    assert all(r["status"] == "cited" or r["why"] for r in rows)
    text = subprocess.run([sys.executable, "-m", "eagle.check", "--coverage"], capture_output=True, text=True,
                          timeout=120, cwd=REPO).stdout
    assert "uncited normative sentences: 0" in text
