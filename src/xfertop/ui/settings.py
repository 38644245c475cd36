"""Display choices kept between runs, in ``$XDG_CONFIG_HOME/xfertop/config.json`` (else ~/.config/...):

    {"theme": "textual-dark", "monochrome": false, "ended_fold_s": 30, "ended_forget_s": 600}

``theme``: the last theme picked in the command palette (ctrl+p, "theme"); ``monochrome``: grey levels
only (the m key; NO_COLOR in the environment does it too); ``ended_fold_s``: an ended job folds into the
"N ended jobs: f shows them" line this long after it ended; ``ended_forget_s``: and leaves the view after
this (`--once --json` and record files keep it).

A file that cannot be read or parsed is ignored (the defaults apply); one that cannot be written is
not written (the choice lasts for this run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xfertop.ui.jobs_pane import ENDED_FOLD_S, ENDED_FORGET_S


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "xfertop" / "config.json"


@dataclass(frozen=True)
class Settings:
    theme: str | None = None
    monochrome: bool = False
    ended_fold_s: float = ENDED_FOLD_S
    ended_forget_s: float = ENDED_FORGET_S
    #: Where they are kept; None: nowhere (tests, a read-only home).
    path: Path | None = None

    @classmethod
    def load(cls, path: Path | None = None) -> Settings:
        path = path if path is not None else config_path()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            data = {}
        if not isinstance(data, dict):
            data = {}
        found = cls(path=path)
        theme = data.get("theme")
        fold, forget = data.get("ended_fold_s"), data.get("ended_forget_s")
        return dataclasses.replace(
            found,
            theme=theme if isinstance(theme, str) else None,
            monochrome=data.get("monochrome") is True,
            ended_fold_s=float(fold) if isinstance(fold, int | float) and fold >= 0 else found.ended_fold_s,
            ended_forget_s=(
                float(forget) if isinstance(forget, int | float) and forget >= 0 else found.ended_forget_s
            ),
        )

    def with_changes(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **changes)

    def save(self) -> None:
        if self.path is None:
            return
        data: dict[str, Any] = {
            "theme": self.theme,
            "monochrome": self.monochrome,
            "ended_fold_s": self.ended_fold_s,
            "ended_forget_s": self.ended_forget_s,
        }
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.path.with_suffix(".json.tmp")
            temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            temporary.replace(self.path)
