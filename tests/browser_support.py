"""Headless Chromium for the browser tests: the system's browser (Debian's ``chromium`` package) driven by
Playwright's Python package. Playwright's own browser download is never used, so nothing is fetched: where
either is missing the tests skip and say what to install -- except on CI (``CI`` set, as CI services set it
when they run ``.ci/run``), where they fail, so that CI cannot silently stop testing the browser."""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

#: Set to a Chromium (or Chrome) executable to use instead of the one found on PATH.
CHROMIUM_ENV = "TNLIB_CHROMIUM"
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Root cannot use Chromium's sandbox; /dev/shm is small in containers.
_ARGS = ["--no-sandbox", "--disable-dev-shm-usage"]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


def on_ci() -> bool:
    """True where the environment says it is CI: ``CI`` set to anything but empty, 0 or false."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(reason: str):
    """Skip the test because ``reason`` (something it needs is missing); fail instead on CI."""
    if on_ci():
        pytest.fail(f"CI must run the browser tests, but: {reason}", pytrace=False)
    pytest.skip(reason)


def chromium_executable() -> str | None:
    """The Chromium executable: ``$TNLIB_CHROMIUM``, else the first of chromium/chrome on PATH."""
    configured = os.environ.get(CHROMIUM_ENV)
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return next((path for path in map(shutil.which, _CANDIDATES) if path), None)


def launch_chromium() -> Iterator:
    """Generator for a fixture: yields a headless Playwright ``Browser``, closes it (and Playwright) after."""
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("browser test needs the playwright package: pip install playwright (no browser download: "
                    "it drives the system's Chromium)")
    executable = chromium_executable()
    if executable is None and os.environ.get(CHROMIUM_ENV):
        unavailable(f"{CHROMIUM_ENV}={os.environ[CHROMIUM_ENV]} is not an executable")
    if executable is None:
        unavailable(f"browser test needs Chromium: apt-get install chromium (or set {CHROMIUM_ENV})")
    playwright = sync_playwright().start()
    try:
        try:
            browser = playwright.chromium.launch(executable_path=executable, headless=True, args=_ARGS, timeout=30_000)
        except PlaywrightError as error:
            unavailable(f"Chromium at {executable} does not start headless: {str(error).splitlines()[0]}")
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


def is_local(url: str) -> bool:
    """True for URLs that need no network: files, inline data, blobs and the loopback host."""
    parts = urlsplit(url)
    if parts.scheme in ("file", "data", "blob", "about"):
        return True
    return parts.scheme in ("http", "https", "ws", "wss") and parts.hostname in LOCAL_HOSTS


def isolate(page) -> tuple[list[str], list[str]]:
    """Abort every request to a non-local host and record it; record console errors and uncaught exceptions.

    Returns the two lists (blocked URLs, errors), filled as the page runs.
    """
    blocked: list[str] = []
    errors: list[str] = []

    def route(route) -> None:
        if is_local(route.request.url):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", route)
    page.on("console", lambda message: errors.append(f"console.{message.type}: {message.text}")
            if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    return blocked, errors
