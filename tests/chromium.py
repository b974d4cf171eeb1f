"""A headless Chromium driven over the DevTools protocol, standard library only.

``--remote-debugging-pipe`` makes Chromium read protocol commands from its fd 3 and write
replies and events to its fd 4, each a JSON message ended by a NUL byte: no websocket, no
port, no extra package. One tab is attached with a flat session; :meth:`Browser.visit`
loads a page and returns what a person would notice: console errors, uncaught exceptions,
failed loads, the links and images of the page (resolved by the browser), and whether every
image decoded.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class Visit:
    url: str
    errors: list[str] = field(default_factory=list)  # console errors, exceptions, failed loads
    links: list[str] = field(default_factory=list)  # absolute hrefs of <a> elements
    images: list[dict] = field(default_factory=list)  # {"src", "ok"}: ok = decoded with a size
    title: str = ""
    anchors: list[str] = field(default_factory=list)  # ids on the page


class Browser:
    def __init__(self, executable: str, timeout_s: float = 60.0, width: int = 1280, height: int = 900):
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="pubench-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # the child needs its ends at fds 3 and 4
        self.proc = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
             "--disable-dev-shm-usage", "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            pass_fds=(3, 4), preexec_fn=_dup_to(to_child_r, from_child_w))
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)

    # ---- protocol --------------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._to_child, data):]

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError(f"chromium closed the pipe (exit status {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: bool = False, **params):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _wait_for(self, method: str, deadline: float) -> None:
        while not any(ev.get("method") == method for ev in self.events):
            self.events.append(self._read(deadline))

    # ---- what a test asks for -------------------------------------------------------
    def visit(self, url: str) -> Visit:
        self.events.clear()
        nav = self.call("Page.navigate", session=True, url=url)
        visit = Visit(url)
        if nav.get("errorText"):
            visit.errors.append(f"navigation failed: {nav['errorText']}")
            return visit
        self._wait_for("Page.loadEventFired", time.monotonic() + self.timeout_s)
        info = self.evaluate("""JSON.stringify({
            title: document.title,
            links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
            images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src,
                                                           ok: i.complete && i.naturalWidth > 0})),
            anchors: Array.from(document.querySelectorAll('[id]')).map(x => x.id)})""")
        data = json.loads(info)
        visit.title, visit.links, visit.images, visit.anchors = (data["title"], data["links"], data["images"],
                                                                 data["anchors"])
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.exceptionThrown":
                details = p["exceptionDetails"]
                what = (details.get("exception") or {}).get("description") or details.get("text")
                visit.errors.append(f"exception: {what}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                args = (str(a.get("value", a.get("description"))) for a in p["args"])
                visit.errors.append("console: " + " ".join(args))
            elif m == "Log.entryAdded" and p["entry"].get("level") == "error":
                visit.errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}".strip())
            elif m == "Network.loadingFailed" and not p.get("canceled"):
                visit.errors.append(f"load failed: {p.get('errorText')} ({p.get('type')})")
        return visit

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        params = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            metrics = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": metrics["width"], "height": min(metrics["height"], 6000),
                              "scale": 1}
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self._send({"id": self._next_id + 1, "method": "Browser.close", "params": {}})
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._to_child)
            os.close(self._from_child)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _dup_to(read_end: int, write_end: int):
    def setup() -> None:  # runs in the child between fork and exec
        r, w = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10), fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)  # clear of 3, 4
        os.dup2(r, 3)
        os.dup2(w, 4)

    return setup
