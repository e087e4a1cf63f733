"""Progress of long work, shown the way the place it runs in can show it.

tqdm's notebook widget only lives in a frontend that renders widgets: run by papermill (or saved from it) it stays
at "0/16" and prints nothing to papermill's log. So :func:`progress` picks one of four displays
(:func:`progress_mode`):

``widget``  tqdm's notebook widget -- a kernel started by a Jupyter server (JupyterLab, Notebook), which sets
            ``JPY_SESSION_NAME`` in the kernel's environment;
``bar``     tqdm's text bar -- a terminal (stderr is a TTY) outside a kernel;
``text``    plain lines such as ``sweep: 3/16 runs done, 1m12s elapsed, ~4m left``, flushed as they are written --
            everywhere else: a kernel without a Jupyter server (papermill, nbclient), output piped or logged. In a
            kernel they go to stdout (so the saved notebook and papermill's ``--log-output`` hold them), elsewhere
            to stderr (stdout stays the command's result);
``off``     nothing.

The environment variable ``TNLIB_PROGRESS`` (one of those names) overrides the choice; the main job sets
``text`` for the notebooks it runs.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable, TextIO

MODES = ("widget", "bar", "text", "off")
ENV_VAR = "TNLIB_PROGRESS"
# A text display prints its first and last line, and between them a line once both TEXT_INTERVAL_S seconds and
# TEXT_FRACTION of the work have passed since the last one (whichever is rarer), or TEXT_HEARTBEAT_S seconds have
# passed with some work done. Ten seconds keeps a log of quick work to a few lines while a newcomer still sees it move
# (a 26 s generation shows two lines between its first and last, not none); a tenth of the work bounds work of any
# length to about ten lines (a fast loop over many items floods no notebook); five minutes is the longest a
# reader of the log of hours-long work waits to see it alive and its time left.
TEXT_INTERVAL_S = 10.0
TEXT_FRACTION = 0.1
TEXT_HEARTBEAT_S = 300.0
# LateProgress shows nothing for work that ends within this many seconds (most searches).
LATE_AFTER_S = 30.0


def _in_kernel() -> bool:
    """True inside an IPython kernel (a notebook's process), False in a terminal IPython or plain Python."""
    if "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def progress_mode() -> str:
    """The display to use here: $TNLIB_PROGRESS when set (a ValueError naming it when it is not a mode), else
    ``widget`` in a kernel a Jupyter server started, ``text`` in any other kernel, ``bar`` on a terminal and
    ``text`` when stderr is not one."""
    chosen = os.environ.get(ENV_VAR, "").strip().lower()
    if chosen:
        if chosen not in MODES:
            raise ValueError(f"{ENV_VAR} must be one of {', '.join(MODES)}, got {os.environ[ENV_VAR]!r}")
        return chosen
    if _in_kernel():
        return "widget" if os.environ.get("JPY_SESSION_NAME") else "text"
    isatty = getattr(sys.stderr, "isatty", None)
    return "bar" if isatty is not None and isatty() else "text"


def duration(seconds: float) -> str:
    """``45s``, ``1m12s``, ``2h05m``: short enough for a progress line."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class TextProgress:
    """Plain progress lines: ``DESC: DONE/TOTAL UNIT done, ELAPSED elapsed, ~LEFT left`` at the start, then once
    ``interval_s`` seconds and ``fraction`` of ``total`` have passed since the last line (or ``heartbeat_s``
    seconds with some work done), and at the end. The time left assumes the remaining items take as long
    as those done since the display began (items already done before, ``initial``, are not counted as progress).
    ``started``: the ``clock()`` at which the work began, where that was before the display (its elapsed time
    counts from there)."""

    def __init__(self, total: int, desc: str, unit: str = "", initial: int = 0, file: TextIO | None = None,
                 interval_s: float = TEXT_INTERVAL_S, clock: Callable[[], float] | None = None,
                 started: float | None = None, fraction: float = TEXT_FRACTION,
                 heartbeat_s: float = TEXT_HEARTBEAT_S) -> None:
        self.total, self.desc, self.unit, self.n, self.initial = total, desc, unit, initial, initial
        self.file = file
        self.interval_s, self.clock = interval_s, clock or time.monotonic
        self.fraction, self.heartbeat_s = fraction, heartbeat_s
        self.shown = self.printed_at = self.clock()
        self.started = self.shown if started is None else started
        self.printed_n = None
        self.postfix = ""
        self.closed = False
        self._print()

    def _print(self) -> None:
        now = self.clock()
        unit = f" {self.unit}" if self.unit else ""
        line = f"{self.desc}: {self.n:,}/{self.total:,}{unit} done, {duration(now - self.started)} elapsed"
        done_here = self.n - self.initial
        if 0 < done_here and self.n < self.total:
            line += f", ~{duration((now - self.shown) / done_here * (self.total - self.n))} left"
        if self.postfix:
            line += f" ({self.postfix})"
        file = self.file or (sys.stdout if _in_kernel() else sys.stderr)
        print(line, file=file, flush=True)
        self.printed_at, self.printed_n = now, self.n

    def update(self, n: int = 1) -> None:
        self.n += n
        since = self.clock() - self.printed_at
        if self.n >= self.total or (since >= self.interval_s and (
                self.n - self.printed_n >= self.fraction * self.total or since >= self.heartbeat_s)):
            self._print()

    def set_postfix(self, **values) -> None:
        self.postfix = ", ".join(f"{key} {value}" for key, value in values.items())

    def close(self) -> None:
        if not self.closed and self.n != self.printed_n:
            self._print()  # stopped early, or between two lines: say where
        self.closed = True


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def set_postfix(self, **values) -> None:
        pass

    def close(self) -> None:
        pass


def progress(total: int, desc: str, unit: str = "", initial: int = 0, disable: bool = False, leave: bool = True,
             interval_s: float = TEXT_INTERVAL_S, started: float | None = None, fraction: float = TEXT_FRACTION):
    """A progress display for ``total`` items (``update(n)``, ``set_postfix(**values)``, ``close()``), chosen by
    :func:`progress_mode`; ``disable`` shows nothing, ``leave=False`` removes a bar or widget when it closes
    (text lines stay: they are a log). ``interval_s`` and ``fraction``: a text display's least time and least
    share of the work between two lines (:class:`TextProgress`);
    ``started``: the ``time.monotonic()`` at which the work began, where before now (a text display's elapsed
    time counts from there)."""
    mode = "off" if disable else progress_mode()
    if mode == "off":
        return _Silent()
    if mode == "text":
        return TextProgress(total, desc, unit, initial, interval_s=interval_s, started=started, fraction=fraction)
    if mode == "widget":
        from tqdm.notebook import tqdm
    else:
        from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit=unit or "it", initial=initial, leave=leave)


def say_done(total: int, desc: str, unit: str = "", detail: str = "") -> None:
    """One line for work found all done before it began (``sweep: 32/32 runs done already (DETAIL)``), where a
    display would show it (:func:`progress_mode`; nothing where that is ``off``): a bar would sit at its end with no
    rate to show ("?runs/s") and a text display would time nothing."""
    if progress_mode() == "off":
        return
    unit = f" {unit}" if unit else ""
    line = f"{desc}: {total:,}/{total:,}{unit} done already" + (f" ({detail})" if detail else "")
    print(line, file=sys.stdout if _in_kernel() else sys.stderr, flush=True)


class LateProgress:
    """A display for work that most often ends in seconds but can take minutes (a search at the paper's sizes):
    nothing until it has run ``after_s`` seconds, then :func:`progress` from where it stands, so that short work
    leaves no lines behind. ``update_to(n)`` sets the count done (the work reports its running total);
    ``close()`` when the work ends."""

    def __init__(self, total: int, desc: str, unit: str = "", after_s: float = LATE_AFTER_S,
                 disable: bool = False) -> None:
        self.total, self.desc, self.unit, self.after_s, self.disable = total, desc, unit, after_s, disable
        self.started = time.monotonic()  # the text display's clock: its elapsed time counts from here
        self.display = None
        self.done = 0

    def update_to(self, n: int) -> None:
        if self.disable:
            return
        if self.display is None:
            if time.monotonic() - self.started < self.after_s:
                return
            self.display = progress(self.total, self.desc, self.unit, initial=n, leave=False, started=self.started)
        else:
            self.display.update(n - self.done)
        self.done = n

    def close(self) -> None:
        if self.display is not None:
            self.display.close()


__all__ = ["ENV_VAR", "LATE_AFTER_S", "LateProgress", "MODES", "TextProgress", "duration", "progress", "progress_mode",
           "say_done"]
