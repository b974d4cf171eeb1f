"""The static HTML site: every page and link is there, nothing loads from elsewhere, text is
escaped, cells are coloured by the delta; and, where Chromium is installed, the pages load in
a real headless browser without console errors, every link resolves, and a screenshot is taken."""

import re
import struct
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from pubench.cli import main
from pubench.jobs import expand
from pubench.registry import load_all
from pubench.report.crossref import load_crossref
from pubench.report.site import write_site
from pubench.store import ResultStore
from tests.chromium import Browser
from tests.conftest import selftest_spec

MAPPING = """\
entries:
  - method: A
    dataset: x data
    setting: "n = 1"
    cells:
      - {spec: table1-bcl, row: "A<i>", col: x, setting: "002's way"}
      - {spec: table1-pucl, row: "A<i>", col: x, setting: "000's way"}
"""


@pytest.fixture
def site(tmp_registry):
    """A registry of a table (three tiers of results, one failed cell), a figure and a spec
    without results; a crossref entry; the site written from it."""
    tmp_registry(selftest_spec("table1-bcl", rows=("A<i>", "B"), seeds=3))
    tmp_registry(selftest_spec("fig1-bcl", cols=("alpha=0.1", "alpha=0.2")))
    tmp_registry(selftest_spec("table1-pucl", rows=("A<i>", "C")))
    (tmp_registry.root / "experiments" / "_crossref.yaml").write_text(MAPPING)
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    values = {("A<i>", "x"): [1.4, 1.5, 1.45], ("A<i>", "y"): [3.0, 3.1, 2.9], ("B", "x"): [1.0, 1.1, 0.9]}
    for job in expand(specs["table1-bcl"], "paper", 3).jobs:
        if (job.row, job.col) in values:
            store.write_ok(job, {"score": values[(job.row, job.col)][job.seed_index]}, {},
                           {"wall_s": 60.0 * (job.seed_index + 1)})
        elif job.seed_index == 0:
            store.write_failure(job, RuntimeError("out of memory"), {"wall_s": 2.0})
    for job in expand(specs["table1-bcl"], "smoke", 1).jobs:
        store.write_ok(job, {"score": 0.5}, {}, {"wall_s": 1.0})
    for job in expand(specs["fig1-bcl"], "reduced", 2).jobs:
        store.write_ok(job, {"score": 1.0 + job.seed_index}, {}, {"wall_s": 3.0})
    out = tmp_registry.root / "site"
    index = write_site(specs, store, out, load_crossref(specs))
    return out, index


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids, self.tags = [], set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.ids.add(a.get("id"))
        for key in ("href", "src"):
            if a.get(key):
                self.refs.append((tag, a[key]))


def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def test_site_pages_exist_and_every_link_resolves_locally(site):
    out, index = site
    pages = sorted(out.rglob("*.html"))
    names = {str(p.relative_to(out)) for p in pages}
    assert {"index.html", "crossref.html", "paper/table1-bcl.html", "smoke/table1-bcl.html", "reduced/fig1-bcl.html",
            "spec/table1-bcl.html", "spec/fig1-bcl.html", "spec/table1-pucl.html",
            "verdicts/index.html"} == names  # this registry has no experiments/_verdicts.yaml: no paper pages
    assert (out / "reduced" / "fig1-bcl.png").read_bytes()[:4] == b"\x89PNG"
    parsed = {p: _parse(p) for p in pages}
    for page, refs in parsed.items():
        assert "script" not in refs.tags and "iframe" not in refs.tags
        for tag, ref in refs.refs:
            url = urlparse(ref)
            if url.scheme == "data":
                continue
            assert not url.scheme and not url.netloc, f"{page.name} loads {ref} from elsewhere"
            target = (page.parent / unquote(url.path)).resolve() if url.path else page
            assert target.is_file(), f"{page.relative_to(out)}: broken {tag} {ref}"
            if url.fragment:
                assert url.fragment in parsed[target].ids, f"{page.name}: no #{url.fragment} in {target.name}"
    text = index.read_text()
    assert "http://" not in text and "https://" not in text and "@import" not in text


def test_report_page_content_is_escaped_and_coloured(site):
    out, index = site
    html = (out / "paper" / "table1-bcl.html").read_text()
    assert "A&lt;i&gt;" in html and "A<i>" not in html  # a spec's text never becomes markup
    # A<i>|x: 1.45 vs 1.0 reported, higher is better, tight seeds: better, significant
    cell = re.search(r'<td class="cell (d-[a-z-]+)" title="([^"]*)"><span class="ours">1\.45 ± 0\.05 \(3\)', html)
    assert cell and cell.group(1) == "d-better-sig" and "p=" in cell.group(2)
    # B|x: 1.00 vs 2.0 reported: worse, significant
    assert re.search(r'<td class="cell d-worse-sig"[^>]*><span class="ours">1\.00 ± 0\.10 \(3\)', html)
    for section in ("Claim checks", "Coverage", "Compute", "Notes on the reported numbers"):
        assert section in html
    assert "out of memory" in html  # the failed cell says why
    assert "CPU core-hours" in html and "tier smoke" in html  # link to the other tier's page
    fig = (out / "reduced" / "fig1-bcl.html").read_text()
    assert '<img class="plot" src="fig1-bcl.png"' in fig and "no sleep" not in fig  # reduced: no smoke deviations
    idx = index.read_text()
    assert 'href="paper/table1-bcl.html"' in idx and 'href="spec/table1-pucl.html"' in idx
    assert "3/4 cells" in idx  # table1-bcl at the paper tier: 3 of its 4 cells have results
    cross = (out / "crossref.html").read_text()
    assert 'href="paper/table1-bcl.html"' in cross and "002&#39;s way" in cross


def test_site_is_rewritten_whole(site, tmp_registry):
    out, _ = site
    (out / "paper" / "stale.html").write_text("old")
    write_site(load_all(), ResultStore(tmp_registry.root / "results"), out)
    assert not (out / "paper" / "stale.html").exists() and (out / "index.html").exists()


@pytest.mark.parametrize("make,problem", [
    (lambda p: p.write_text("x"), "is a file, not a folder"),
    (lambda p: (p.mkdir(), (p / "thesis.tex").write_text("mine")), "holds no pubench site"),
])
def test_site_never_replaces_what_it_did_not_write(tmp_registry, capsys, make, problem):
    tmp_registry(selftest_spec())
    target = tmp_registry.root / "elsewhere"
    make(target)
    assert main(["site", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert problem in err and len(err.strip().splitlines()) == 1
    assert target.exists()


def test_broken_crossref_file_is_one_line(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    (tmp_registry.root / "experiments" / "_crossref.yaml").write_text("entries: [ {method: a,")
    assert main(["site", "--out", str(tmp_registry.root / "s")]) == 2
    err = capsys.readouterr().err
    assert "_crossref.yaml: does not parse" in err and len(err.strip().splitlines()) == 1


def test_cli_site_and_report_html(tmp_registry, capsys):
    tmp_registry(selftest_spec())
    assert main(["run", "table1-bcl", "--tier", "smoke", "--no-progress"]) == 0
    assert main(["site", "--out", str(tmp_registry.root / "mysite")]) == 0
    assert "open file://" in capsys.readouterr().out and (tmp_registry.root / "mysite" / "index.html").exists()
    assert main(["report", "table1-bcl", "--tier", "smoke", "--html", "--snippet"]) == 0
    reports = tmp_registry.root / "reports"
    assert (reports / "site" / "smoke" / "table1-bcl.html").exists()
    assert "\\documentclass" not in (reports / "smoke" / "table1-bcl.tex").read_text()  # --snippet
    assert main(["report", "table1-bcl", "--tier", "smoke"]) == 0
    assert (reports / "smoke" / "table1-bcl.tex").read_text().count("\\documentclass") == 1  # standalone: default


# ---- a real browser ------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_site_in_headless_chromium(site, tmp_path, chromium):
    out, index = site
    seen, queue = {}, [index.resolve().as_uri()]
    with Browser(chromium) as browser:
        while queue:
            url = queue.pop()
            page_url = url.split("#")[0]
            if page_url in seen:
                continue
            visit = browser.visit(page_url)
            seen[page_url] = visit
            assert visit.errors == [], f"{page_url}: {visit.errors}"
            assert all(img["ok"] for img in visit.images), f"{page_url}: an image did not load: {visit.images}"
            for link in visit.links:
                parsed = urlparse(link)
                assert parsed.scheme == "file", f"{page_url} links outside the site: {link}"
                target = Path(unquote(parsed.path))
                assert target.is_file(), f"{page_url}: broken link {link}"
                if parsed.fragment and link.split("#")[0] == page_url:
                    assert parsed.fragment in visit.anchors, f"{page_url}: no #{parsed.fragment}"
                queue.append(link)
        report = browser.visit((out / "paper" / "table1-bcl.html").resolve().as_uri())
        assert report.title.startswith("table1-bcl (paper)")
        shot = browser.screenshot(tmp_path / "table1-bcl-paper.png")
    assert len(seen) == len(list(out.rglob("*.html")))  # every page is reachable from the index
    width, height = _png_size(shot.read_bytes())
    assert width >= 1000 and height > 600 and shot.stat().st_size > 20_000  # the whole page, in a 1280 px window


def test_the_browser_check_sees_broken_pages(tmp_path, chromium):
    """The harness itself: a console error, an exception, a missing image and a missing page are reported."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><html><head><link rel="icon" href="data:,"><title>bad</title></head><body>'
                   '<img src="missing.png"><script>console.error("boom"); undefinedFunction();</script></body></html>')
    with Browser(chromium) as browser:
        visit = browser.visit(bad.as_uri())
        missing = browser.visit((tmp_path / "nope.html").as_uri())
    text = " ".join(visit.errors)
    assert "boom" in text and "undefinedFunction" in text and "load failed" in text
    assert visit.images == [{"src": (tmp_path / "missing.png").as_uri(), "ok": False}]
    assert missing.errors and "ERR_FILE_NOT_FOUND" in missing.errors[0]


def test_legends_show_code_spans_not_backticks():
    """Issue 54: the HTML legends printed markdown backticks literally; they are <code> now."""
    from pubench import paths
    from pubench.registry import get_spec
    from pubench.report.collect import collect
    from pubench.report.html import report_body

    res = collect(get_spec("table2-punce"), "reduced", ResultStore(paths.project_root() / "results"))
    legends = re.findall(r'<p class="legend">(.*?)</p>', report_body(res, None, [], "spec.html"), flags=re.S)
    assert len(legends) >= 5 and any("<code>" in text for text in legends)
    assert not [text for text in legends if "`" in text]


def test_the_site_folder_is_not_tracked_by_git():
    import shutil
    import subprocess

    if shutil.which("git") is None or not (Path(__file__).resolve().parents[2] / ".git").exists():
        pytest.skip("not a git checkout")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(["git", "check-ignore", "-q", "reports/site/index.html"], cwd=root)
    assert out.returncode == 0, "reports/site/ is not ignored (.gitignore)"


def test_reduced_cells_are_coloured_by_their_ordering_not_their_gap(tmp_path):
    """At the reduced tier (another scale than the paper's) a cell's colour says whether it orders
    against its block's rows as the paper does; the paper tier keeps the gap colouring."""
    import yaml

    from pubench.registry import parse_spec
    from pubench.report.collect import collect
    from pubench.report.html import rank_class, report_body

    spec = parse_spec(yaml.safe_load(selftest_spec(rows=("A", "B"), cols=("x", "y"))), "<t>")
    store = ResultStore(tmp_path)
    # the paper prints A|x 1.0 < B|x 2.0; reduced: far below both, B above A on x as the paper (agree)
    values = {("A", "x"): -60.0, ("B", "x"): -50.0}
    for tier in ("reduced", "paper"):
        for job in expand(spec, tier, 2).jobs:
            if (job.row, job.col) in values:
                store.write_ok(job, {"score": values[(job.row, job.col)] + job.seed_index}, {}, {"wall_s": 1.0})
    reduced, paper = collect(spec, "reduced", store), collect(spec, "paper", store)
    cls, tip = rank_class(reduced, "A", "x", "score")
    assert cls == "r-agree" and "1 of 1" in tip
    html = report_body(reduced, None, [], "spec.html")
    assert re.search(r'<td class="cell r-agree"[^>]*><span class="ours">-59\.50', html) and "d-worse" not in html
    assert "read the rankings, so a cell's colour is its ordering" in html
    assert re.search(r'<td class="cell d-worse-sig"[^>]*><span class="ours">-59\.50', report_body(paper, None, [],
                                                                                                  "spec.html"))
    swapped = {("A", "x"): -40.0, ("B", "x"): -50.0}  # A above B: against the paper's order
    store2 = ResultStore(tmp_path / "s2")
    for job in expand(spec, "reduced", 2).jobs:
        if (job.row, job.col) in swapped:
            store2.write_ok(job, {"score": swapped[(job.row, job.col)] + job.seed_index}, {}, {"wall_s": 1.0})
    assert rank_class(collect(spec, "reduced", store2), "B", "x", "score")[0] == "r-against"


def test_the_index_fits_the_window_and_its_captions_stay_short(tmp_registry, chromium):
    """Issue 64: the index table was cut off at the right and captions wrapped into 10-15-line rows
    (a caption column squeezed by tier cells that never wrapped their regime lines)."""
    import json

    caption = ("Linear evaluation of different contrastive losses on four image data sets with the encoder "
               "trained on positive and unlabeled data at three label budgets, each averaged over five runs, "
               "with the standard deviation in parentheses and the best method of each column in bold face.")
    groups = {f"end-to-end PU baselines trained on the reduced subset, block {g}": list(pair)
              for g, pair in enumerate((("A", "B"), ("C", "D"), ("E", "F")))}
    regime = "".join(f"  - {{block: '{name}', group: '{name}', check: trained, reference: {rows[1]}, "
                     f"baseline: {rows[0]}, margin: 0}}\n" for name, rows in groups.items())
    extra = "row_groups:\n" + "".join(f"  '{n}': [{', '.join(r)}]\n" for n, r in groups.items()) + "regime:\n" + regime
    for sid in ("table1-bcl", "table2-bcl", "table3-bcl", "fig4-bcl"):
        text = selftest_spec(sid, rows=("A", "B", "C", "D", "E", "F"), extra=extra).replace(
            "caption: A test table.", f"caption: {caption}").replace(
            "          rows:\n            A: {value: 1.0}\n            B: {value: 2.0}\n", "          rows: {}\n")
        tmp_registry(text)
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    for spec in specs.values():
        for tier in ("paper", "reduced", "smoke"):
            for job in expand(spec, tier, 2).jobs:
                store.write_ok(job, {"score": 1.0 + job.seed_index + (job.row > "B")}, {}, {"wall_s": 30.0})
    out = tmp_registry.root / "site"
    write_site(specs, store, out)
    for width in (1280, 1400):
        with Browser(chromium, width=width) as browser:
            visit = browser.visit((out / "index.html").resolve().as_uri())
            assert visit.errors == []
            got = json.loads(browser.evaluate("""JSON.stringify((() => {
              const t = document.querySelector('table.index');
              const lines = Array.from(t.querySelectorAll('td.caption')).map(td => {
                const r = document.createRange(); r.selectNodeContents(td);
                return r.getBoundingClientRect().height / parseFloat(getComputedStyle(td).lineHeight); });
              return {win: window.innerWidth, doc: document.documentElement.scrollWidth,
                      right: t.getBoundingClientRect().right, lines: Math.max(...lines)}; })())"""))
        assert got["right"] <= got["win"] and got["doc"] <= got["win"], got  # nothing cut off at the right
        assert got["lines"] <= 5, got  # a caption of at most a few lines (the whole one on hover)


def test_site_pages_carry_no_issue_numbers_or_commit_hashes(tmp_registry):
    """Issue 64: notes cited "in commit 6a8e70f (issue 36's two_classes blocks ...)", which a reader of
    the site cannot follow; the site renders them out (the markdown report keeps them)."""
    notes = ["Added after the first records, in commit 6a8e70f (issue 36's two_classes blocks for the tables).",
             "The like-for-like rule of issue 36, every method of a block on the same data (issue 36, item 6.2).",
             "Outcome (run 2026-11-29, from clean trees at 3eebaa6 and d007ade; written 2026-11-29, issue 50 item 7: "
             "the value), corrected for issue 36 (item 6) since the rerun (branch t3cifar, bde1262)."]
    tmp_registry(selftest_spec(extra="decisions:\n" + "".join(f"  - \"{n}\"\n" for n in notes)))
    specs = load_all()
    store = ResultStore(tmp_registry.root / "results")
    for job in expand(specs["table1-bcl"], "reduced", 2).jobs:
        store.write_ok(job, {"score": 1.0 + job.seed_index}, {}, {"wall_s": 3.0})
    out = tmp_registry.root / "site"
    write_site(specs, store, out)
    for page in (out / "spec" / "table1-bcl.html", out / "reduced" / "table1-bcl.html"):
        text = page.read_text()
        assert not re.search(r"issues? \d|\b(6a8e70f|3eebaa6|d007ade|bde1262)\b", text), page
        assert "Added after the first records (the two_classes blocks for the tables)." in text
        assert "The like-for-like rule, every method of a block on the same data." in text
        assert ("Outcome (run 2026-11-29, from clean trees at two commits; written 2026-11-29: the value), corrected "
                "since the rerun (branch t3cifar).") in text
