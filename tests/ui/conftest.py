"""Every UI test gets an empty config directory: nobody's saved theme or monochrome choice leaks in, and
a test that changes them writes nowhere that lasts."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _config_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("NO_COLOR", raising=False)
    return home
