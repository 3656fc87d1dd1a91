"""The documentation site builds, links and renders. `mkdocs build --strict`
on mkdocs.yml (whose `validation:` makes a link to a missing page or anchor, a
page left out of the nav or an unknown API name a warning, and --strict every
warning a failure) runs once per module and the other tests read its site/;
a planted broken link and anchor fail a scratch copy's build; the API page
documents every name of towertrain.__all__; headless Chromium renders the home
page, the API reference and the errors page with their navigation, every
asset they load present. Without MkDocs or Chromium the tests skip and say why
(the README's test command installs MkDocs, .ci/run installs Chromium)."""
import html.parser
import importlib
import os
import re
import shutil
import subprocess
import sys
import urllib.parse

import pytest

from helpers.doc_blocks import ROOT

NO_MKDOCS = ("MkDocs is not installed (pip install -e \".[docs]\"; the README's test "
             "command's `test` extra brings it)")
NO_CHROMIUM = ("Chromium is not installed (apt-get install -y chromium; .ci/run installs "
               "it before the README's test command)")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
# The pages the render test opens: the home page, the API reference, the errors page.
RENDERED = ("index.html", "api.html", "errors.html")


def mkdocs_build(config_dir, site_dir):
    """(exit status, output) of `mkdocs build --strict` of config_dir/mkdocs.yml."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
         os.path.join(config_dir, "mkdocs.yml"), "-d", site_dir],
        cwd=config_dir, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built once from the repository's docs/ and mkdocs.yml."""
    for module in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(NO_MKDOCS)
    site_dir = str(tmp_path_factory.mktemp("docs") / "site")
    status, output = mkdocs_build(ROOT, site_dir)
    assert status == 0, f"mkdocs build --strict failed:\n{output[-4000:]}"
    return site_dir


def test_the_site_builds_strictly_with_every_page_in_the_nav(site):
    pages = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "docs"))
                   if name.endswith(".md"))
    for page in pages:
        assert os.path.isfile(os.path.join(site, page + ".html")), page
    with open(os.path.join(site, "index.html"), encoding="utf-8") as f:
        home = f.read()
    for page in pages:  # the nav on every page links every page
        assert f'href="{page}.html"' in home or page == "index", f"{page} not in the nav"


def test_a_broken_link_or_anchor_fails_the_build(site, tmp_path):
    """A scratch copy of the docs with a link to a missing page and one to a
    missing anchor of a real page: the strict build fails naming both."""
    shutil.copytree(os.path.join(ROOT, "docs"), tmp_path / "docs")
    shutil.copy(os.path.join(ROOT, "mkdocs.yml"), tmp_path)
    for package in ("towertrain", "models", "input_pipeline"):  # for the API page
        os.symlink(os.path.join(ROOT, package), tmp_path / package)
    with open(tmp_path / "docs" / "usage.md", "a", encoding="utf-8") as f:
        f.write("\nSee [the guide](no-such-page.md) and "
                "[the table](errors.md#no-such-anchor).\n")
    status, output = mkdocs_build(str(tmp_path), str(tmp_path / "site"))
    assert status != 0, output[-3000:]
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert any("no-such-page.md" in line for line in warnings), output[-3000:]
    assert any("#no-such-anchor" in line for line in warnings), output[-3000:]


def _api_targets():
    with open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8") as f:
        return re.findall(r"^::: (\S+)", f.read(), re.M)


def test_the_api_page_documents_every_public_name_and_nothing_else(site):
    import towertrain
    targets = _api_targets()
    assert sorted(t.rsplit(".", 1)[-1] for t in targets) == sorted(towertrain.__all__)
    for target in targets:
        module, name = target.rsplit(".", 1)
        if module.split(".")[0] in ("models", "input_pipeline"):  # installed under towertrain
            module = "towertrain." + module
        assert getattr(importlib.import_module(module), name) is getattr(towertrain, name), (
            f"docs/api.md: {target} is not towertrain.{name}")
    with open(os.path.join(site, "api.html"), encoding="utf-8") as f:
        page = f.read()
    for target in targets:
        assert f'id="{target}"' in page, f"api.html has no entry for {target}"
    assert "Trainer" in page and "from_arrays" in page


class _Links(html.parser.HTMLParser):
    """Every URL a page loads or links (src, href), and its nav links."""

    def __init__(self):
        super().__init__()
        self.urls, self.nav_links, self._nav_depth = [], [], 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "nav":
            self._nav_depth += 1
        for key in ("src", "href"):
            if attrs.get(key):
                self.urls.append((tag, attrs[key]))
        if tag == "a" and self._nav_depth and attrs.get("href"):
            self.nav_links.append(attrs["href"])

    def handle_endtag(self, tag):
        if tag == "nav":
            self._nav_depth -= 1


def missing_assets(site_dir, page, dom):
    """The local files `dom` (of site_dir/page) loads or links that site_dir lacks."""
    links = _Links()
    links.feed(dom)
    missing = []
    for tag, url in links.urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme in ("http", "https", "mailto", "data", "javascript") or not parts.path:
            continue
        path = urllib.parse.unquote(parts.path)
        if parts.scheme == "file":
            local = path
        else:
            local = os.path.normpath(os.path.join(site_dir, os.path.dirname(page), path))
        if not os.path.exists(local):
            missing.append(f"<{tag}> {url}")
    return missing


def test_missing_assets_sees_a_missing_file(site):
    dom = '<link href="assets/none.css"><img src="scaling_resnet20_cpu.png"><a href="#x">'
    assert missing_assets(site, "index.html", dom) == ["<link> assets/none.css"]


@pytest.fixture(scope="module")
def chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip(NO_CHROMIUM)


def render(chromium, page_path, profile, *extra):
    """(exit status, DOM or stdout, stderr) of headless Chromium on a local page."""
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=5000",
         *extra, "file://" + page_path], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("page", RENDERED)
def test_chromium_renders_the_page_with_its_navigation_and_assets(site, chromium, page,
                                                                   tmp_path):
    """The DOM after Chromium ran the page's scripts: its <h1>, the theme's
    script at work (it marks <html> `js-focus-visible`), the nav with a link
    to every page, and no file it loads or links missing from site/."""
    os.mkdir(tmp_path / "profile")  # an empty profile: nothing of another run
    status, dom, errors = render(chromium, os.path.join(site, page), tmp_path / "profile",
                                 "--dump-dom")
    assert status == 0 and "</html>" in dom, errors[-3000:]
    assert missing_assets(site, page, dom) == []
    html_tag = re.search(r"<html[^>]*>", dom).group(0)
    assert "js-focus-visible" in html_tag, f"{page}: the theme's script did not run: {html_tag}"
    links = _Links()
    links.feed(dom)
    pages = {href.split("#")[0] for href in links.nav_links}
    expected = {name[:-3] + ".html" for name in os.listdir(os.path.join(ROOT, "docs"))
                if name.endswith(".md")}
    assert expected <= pages, f"{page}: the navigation lacks {sorted(expected - pages)}"
    title = {"index.html": "towertrain", "api.html": "API reference",
             "errors.html": "Errors and troubleshooting"}[page]
    assert re.search(rf"<h1[^>]*>{re.escape(title)}", dom), f"{page}: no <h1> {title}"
    if page == "errors.html":  # the table near the top, with its rows
        article = dom[dom.index("<article"):]
        assert article.count("<tr>") > 20 and article.index("<table") < 4000


def test_the_render_check_sees_a_page_without_its_theme(site, chromium, tmp_path):
    """Scratch copy of the site without the theme's stylesheet and script:
    the same checks name both files, and the script's mark is absent."""
    copy = tmp_path / "site"
    shutil.copytree(site, copy)
    removed = [os.path.join("assets", "stylesheets", n)
               for n in os.listdir(copy / "assets" / "stylesheets") if n.startswith("main.")]
    removed += [os.path.join("assets", "javascripts", n)
                for n in os.listdir(copy / "assets" / "javascripts") if n.startswith("bundle.")]
    for name in removed:
        os.remove(copy / name)
    os.mkdir(tmp_path / "profile")
    status, dom, errors = render(chromium, str(copy / "index.html"), tmp_path / "profile",
                                 "--dump-dom")
    assert status == 0, errors[-3000:]
    missing = missing_assets(str(copy), "index.html", dom)
    assert {m.split(" ", 1)[1] for m in missing} == {n for n in removed
                                                     if not n.endswith(".map")}
    assert "js-focus-visible" not in re.search(r"<html[^>]*>", dom).group(0)
