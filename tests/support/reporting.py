"""What the report tests share: hostile texts, what a page would act on, report.md as CommonMark, answered pairs."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
from html.parser import HTMLParser
from importlib import resources

from markdown_it import MarkdownIt

from shadowdiff.answers.compare import compare_answers, error_comparison
from shadowdiff.answers.records import Answer, Pair
from shadowdiff.triage.signals import triage_answers
from shadowdiff.vocabulary import Side

SCRIPT = "<script>alert('x')</script>"
IMG = "<img src=x onerror=alert(1)>"
HOSTILE = f"{SCRIPT} {IMG} </textarea></pre> \"double\" 'single' `tick` ```` fence"
FENCED = f"Here is code:\n```python\nprint(1)\n```\nand a longer fence:\n`````\n{SCRIPT}\n`````\n"


class _Live(HTMLParser):
    """What a browser would act on in a page: its elements and their attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []    # each script element's text
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [(tag, name, value) for name, value in attrs]
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def live(html: str) -> _Live:
    parser = _Live()
    parser.feed(html)
    parser.close()
    return parser


def assert_nothing_live(html: str, *shown: str) -> None:
    """No element or attribute that could run or load anything, and each of ``shown``
    is on the page as text."""
    page = live(html)
    assert not {"img", "iframe", "object", "embed", "textarea", "form", "base", "foreignobject", "use",
                "image", "animate", "set"} & set(page.tags)
    # one script runs: report.html's own search, allowed by its hash and nothing else (in a
    # report.md, where raw HTML renders, none)
    csp = [v for tag, name, v in page.attrs if tag == "meta" and name == "content" and v and "default-src" in v]
    own = (resources.files("shadowdiff.report") / "templates" / "_search.js").read_text(encoding="utf-8")
    assert page.scripts in ([], [own]) and page.tags.count("script") == len(page.scripts)
    digest = base64.b64encode(hashlib.sha256(own.encode()).digest()).decode()
    allowed = re.findall(r"script-src ([^;]*)", csp[0]) if csp else []
    assert allowed in ([], [f"'sha256-{digest}'"]) and bool(allowed) == bool(page.scripts)
    # the only SVG is the report's own plots (shadowdiff.report.svg escapes every text in them)
    plots = [value for tag, name, value in page.attrs if tag == "svg" and name == "id"]
    assert page.tags.count("svg") == len(plots) and all((value or "").startswith("plot-") for value in plots)
    assert [a for a in page.attrs if a[1].startswith("on")] == []
    assert [a for a in page.attrs if a[1] in ("href", "src") and "javascript:" in (a[2] or "")] == []
    assert csp and "default-src 'none'" in csp[0] and "unsafe" not in csp[0].replace("style-src 'unsafe-inline'", "")
    text = "".join(page.text)
    for value in shown:
        assert value in text, value


def commonmark(md: str) -> list[object]:
    """report.md as a CommonMark renderer reads it (raw HTML allowed, as the spec allows)."""
    return list(MarkdownIt("commonmark").parse(md))


def answered_pair(key: str, seq: int, base: str | Answer, cand: str | Answer, *, category: str | None = None,
                  prompt: str = "a prompt") -> Pair:
    """Two answers (or texts) as a pair, compared and triaged as replay does; an error on either side
    makes an error pair."""
    answers = {Side.BASELINE: base if isinstance(base, Answer) else Answer(Side.BASELINE, "m", base),
               Side.CANDIDATE: cand if isinstance(cand, Answer) else Answer(Side.CANDIDATE, "m", cand)}
    b, c = answers[Side.BASELINE], answers[Side.CANDIDATE]
    if not (b.ok and c.ok):
        return Pair(key, seq, "/v1/chat/completions", prompt, {"messages": [{"role": "user", "content": prompt}]},
                    error_comparison(), answers, category=category)
    comparison = compare_answers(b, c)
    return Pair(key, seq, "/v1/chat/completions", prompt, {"messages": [{"role": "user", "content": prompt}]},
                comparison, answers, category=category, **triage_answers(b, c, comparison, None))


# OWASP's forms of a formula: after white space or a line break, full-width, after a separator
OWASP_FORMS = (" =1+1", "\n=1+1", "\r\n=1+1", "\t=1+1", "\uff1d1+1", "\uff0b1+1", "\uff0d1+1", "\uff20SUM(A1)",
               "\u3000=1+1", "a;=1+1", "a,=1+1", "a\t=1+1", "a; \uff1d1+1", 'a";=1+1', "one\n- two\n@three")
FORMULA_CHARS = tuple("=+-@\uff1d\uff0b\uff0d\uff20")


def runs_as_formula(cell: str) -> bool:
    """Whether a spreadsheet could run this cell (a number, negative or not, is a number)."""
    try:
        float(cell)
        return False
    except ValueError:
        return cell.startswith(("\t", "\r", "\n")) or cell.lstrip().startswith(FORMULA_CHARS)


def assert_no_formula_in_csv(data: str) -> None:
    """No cell runs: read with each separator a spreadsheet may pick, and split at any
    separator or line break inside a cell as a reader that ignores the quotes would."""
    for separator in (",", ";", "\t"):
        cells = [cell for row in csv.reader(io.StringIO(data, newline=""), delimiter=separator) for cell in row]
        assert [c for c in cells if runs_as_formula(c)] == [], separator
    cells = [cell for row in csv.reader(io.StringIO(data, newline="")) for cell in row]
    pieces = [p for cell in cells for p in re.split("[,;\t\n]", cell)[1:]]
    assert [p for p in pieces if runs_as_formula(p)] == []
