"""The keys line at the bottom: each key and its label whole, the ones that do not fit left out.

Textual's Footer squeezes every key into a grid cell of its own, cutting labels mid-word on a narrow
terminal (`t Topology` reads `t T` at 80 columns). This line lists the screen's shown bindings in order
(the focused widget's first, as Textual's Footer does) and stops before the first one that does not fit;
`?` (help) lists them all.
"""

from __future__ import annotations

from rich.text import Text

from xfertop.ui.text_lines import TextLines


class KeyFooter(TextLines):
    DEFAULT_CSS = """
    KeyFooter { height: 1; dock: bottom; background: $panel; }
    """

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, _screen: object) -> None:
        self.update_lines()

    def labels(self) -> list[tuple[str, str]]:
        """(key as shown, label) of each binding shown, one per action."""
        seen: set[str] = set()
        labels = []
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or not enabled or binding.action in seen:
                continue
            seen.add(binding.action)
            labels.append((self.app.get_key_display(binding), binding.description))
        return labels

    def build_lines(self, width: int) -> list[Text]:
        line = Text()
        for key, label in self.labels():
            item = Text.assemble((f" {key} ", "bold reverse"), f" {label} ")
            if line.cell_len + item.cell_len > width:
                break
            line.append_text(item)
        return [line]
