"""Where the browser tests cannot run: they skip with the reason locally and fail on CI, so that CI
cannot silently stop testing the explorer in a browser."""
from __future__ import annotations

import pytest

import browser_support


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("1", pytest.fail.Exception),
                                         (None, pytest.skip.Exception), ("false", pytest.skip.Exception)])
def test_missing_chromium_fails_on_ci_and_skips_elsewhere(monkeypatch, tmp_path, ci, outcome):
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    missing = tmp_path / "no-chromium"
    monkeypatch.setenv(browser_support.CHROMIUM_ENV, str(missing))
    pytest.importorskip("playwright")  # without it the reason is the package, checked first
    with pytest.raises(BaseException) as raised:  # pytest's skip and fail outcomes are BaseExceptions
        next(browser_support.launch_chromium())
    assert raised.type is outcome, raised.value
    assert f"{browser_support.CHROMIUM_ENV}={missing} is not an executable" in str(raised.value)
