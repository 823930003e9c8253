"""A screenshot of the interactive report (docs): `python -m benchmarks.report_shot RUN_DIR
OUT.png` writes RUN_DIR's report to a temporary file, opens it in Debian's headless
chromium driven by Playwright and saves a PNG of its first part (the docs' picture,
docs/img/report-devops100.png, is of the devops100 run). The browser's launch is the one
tests/e2e/test_report_browser.py uses."""

from __future__ import annotations

import argparse
import pathlib
import tempfile

CHROMIUM = "/usr/bin/chromium"      # Debian's package chromium; Playwright downloads no browser here
# no GPU, no sandbox (root), and none of the browser's own network traffic (the machine has no network)
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def launch(playwright):
    """Debian's chromium, headless, started by Playwright."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)


def open_report(browser, path: pathlib.Path, width: int = 1400, height: int = 1000):
    """A page of browser showing the report file path, its script done (body[data-ready])."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("body[data-ready='1']", timeout=30_000)
    return page


def main() -> None:
    from playwright.sync_api import sync_playwright

    from tsbench.experiments.report import write_report

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("run_dir")
    ap.add_argument("out")
    ap.add_argument("--height", type=int, default=2300, help="pixels of the page's top shown")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        html = write_report(a.run_dir, pathlib.Path(tmp) / "report.html")
        with sync_playwright() as p:
            browser = launch(p)
            try:
                page = open_report(browser, html, height=a.height)
                page.screenshot(path=a.out, full_page=False)
            finally:
                browser.close()
    print(f"{a.out}: {pathlib.Path(a.out).stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
