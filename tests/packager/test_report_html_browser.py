"""report.html in a real browser: Debian's chromium, headless, opens a compiled bundle's page from disk.

- It renders: the DOM chromium builds has the layer table with a row per kernel call of the plan, each naming
  the model layers the call implements, and the memory plan's SVG with an element per arena buffer.
- It makes no external request: chromium runs with every request sent to a proxy of ours on the loopback
  (a proxy auto-config script, loopback not bypassed), which records each connection; none may arrive. The
  browser's own background services (component updates, network time, account checks: BROWSER_HOSTS, which
  `--disable-background-networking` does not silence) go to a second recorder, not counted. The DOM holds no
  fetchable reference either (html_tree.external_references). A control page (the report with a remote image
  added and its Content-Security-Policy taken out) proves the recorder sees a request when there is one.

chromium comes from scripts/install_deps.sh. Without it the test is skipped, saying so, except under CI
(CI=true), where it must run.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from html_tree import external_references, parse_html
from packager.report_html import CONTENT_SECURITY_POLICY, REPORT_HTML_FILE
from printable import printable

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None and os.environ.get("CI") != "true",
    reason="chromium is not installed (bash scripts/install_deps.sh installs it); under CI=true this test runs")

BUNDLES = [("mlperf_tiny/kws_ref_model.tflite", "cortex-m4f"),  # measured instructions, estimated times
           ("tflm/person_detect.tflite", "lowpower")]  # estimated instructions, no clock
"""Pairs the session compiles for other tests too (tests/conftest.py's cache)."""

BROWSER_HOSTS = ("clients1.google.com", "clients2.google.com", "update.googleapis.com", "accounts.google.com",
                 "redirector.gvt1.com", "edgedl.me.gvt1.com", "safebrowsing.googleapis.com",
                 "optimizationguide-pa.googleapis.com", "content-autofill.googleapis.com")
"""The hosts chromium's own services call whatever page it shows (none is a page's font or script host)."""


class RequestRecorder:
    """A TCP server on the loopback that records the first bytes of every connection made to it, then closes it."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.browser_port = 0  # where the browser's own requests go (the fixture sets it)
        self.requests: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._server.accept()
            except OSError:  # closed
                return
            with connection:
                connection.settimeout(2)
                try:
                    self.requests.append(connection.recv(200))
                except OSError:
                    self.requests.append(b"(nothing sent)")

    def close(self) -> None:
        self._server.close()
        self._thread.join(timeout=5)


@pytest.fixture
def recorder():
    """The recorder of the page's requests (a second one takes the browser's own, BROWSER_HOSTS)."""
    page, browser = RequestRecorder(), RequestRecorder()
    page.browser_port = browser.port
    yield page
    page.close()
    browser.close()


def dump_dom(page: Path, recorder: RequestRecorder, profile_dir: Path) -> str:
    """The DOM chromium builds from `page` (a file), every request it makes sent to `recorder` (those to
    BROWSER_HOSTS to the browser's own recorder)."""
    assert CHROMIUM is not None, "chromium is required under CI=true: bash scripts/install_deps.sh installs it"
    browser = " || ".join(f"host == '{host}'" for host in BROWSER_HOSTS)
    script = (f"function FindProxyForURL(url, host) {{ if ({browser}) "
              f"return 'PROXY 127.0.0.1:{recorder.browser_port}'; return 'PROXY 127.0.0.1:{recorder.port}'; }}")
    pac = "data:application/x-ns-proxy-autoconfig;base64," + base64.b64encode(script.encode()).decode()
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", f"--user-data-dir={profile_dir}",
         f"--proxy-pac-url={pac}", "--proxy-bypass-list=<-loopback>", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("model, target", BUNDLES)
def test_the_report_renders_every_layer_and_buffer_and_requests_nothing(model, target, compiled, recorder,
                                                                        tmp_path: Path) -> None:
    bundle = compiled(model, target)
    dom = parse_html(dump_dom(bundle.out_dir / REPORT_HTML_FILE, recorder, tmp_path / "profile"))
    assert recorder.requests == []
    assert external_references(dom) == []
    rows = [row for body in dom.find_id("layer-table").iter("tbody") for row in body.iter("tr")]
    assert len(rows) == len(bundle.plan.calls)
    for call, row in zip(bundle.plan.calls, rows):
        for operator in call.operators:
            assert f"{printable(operator.name)} #{operator.index}" in row.text(), (operator, row.text())
    drawn = {g.iter("title").__next__().text().split(":")[0] for svg in dom.iter("svg") for g in svg.iter("g")
             if g.attrs.get("class") == "buffer"}
    assert drawn == set(bundle.memory.offsets)


def test_the_recorder_sees_a_remote_image_the_policy_would_block(compiled, recorder, tmp_path: Path) -> None:
    """The control: the same page with a remote <img> and without its Content-Security-Policy makes a request,
    and the recorder gets it (so an empty record above means no request, not a blind recorder)."""
    bundle = compiled(*BUNDLES[0])
    text = (bundle.out_dir / REPORT_HTML_FILE).read_text(encoding="utf-8")
    assert CONTENT_SECURITY_POLICY in text
    tainted = tmp_path / REPORT_HTML_FILE
    tainted.write_text(text.replace(CONTENT_SECURITY_POLICY, "").replace(
        "</body>", '<img src="http://report-html-test.invalid/remote.png"></body>'), encoding="utf-8")
    dom = parse_html(dump_dom(tainted, recorder, tmp_path / "profile"))
    assert external_references(dom) == ["img src=http://report-html-test.invalid/remote.png"]
    assert any(b"report-html-test.invalid" in request for request in recorder.requests), recorder.requests
