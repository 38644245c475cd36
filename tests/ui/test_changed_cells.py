"""Which cells of a row changed between two drawings (text_lines.changed_cells): only those are refreshed,
since Textual sends each refreshed region to the terminal whole. Wherever the answer cannot be told
cheaply it is None, and the whole row is refreshed."""

from __future__ import annotations

from rich.text import Text

from xfertop.ui.text_lines import changed_cells


def test_a_clocks_seconds_are_the_cells_that_changed() -> None:
    assert changed_cells(Text("xfertop  21:55:09  vm"), Text("xfertop  21:55:10  vm")) == (15, 17)


def test_a_figure_that_grows_moves_everything_after_it() -> None:
    # "9.5 GB/s" to "10.2 GB/s": the unit moved one cell right, so every cell from the change on.
    assert changed_cells(Text("RX 9.5 GB/s"), Text("RX 10.2 GB/s")) == (3, 12)
    assert changed_cells(Text("RX 10.2 GB/s"), Text("RX 9.5 GB/s")) == (3, 12)


def test_styles_outside_the_changed_text_must_match() -> None:
    old, new = Text("load 12%"), Text("load 13%")
    old.stylize("green", 5, 8)
    new.stylize("green", 5, 8)
    assert changed_cells(old, new) == (6, 7)
    red = Text("load 13%")
    red.stylize("red", 5, 8)
    assert changed_cells(old, red) is None, "the colour of unchanged digits changed too"
    assert changed_cells(Text("a", style="bold"), Text("b")) is None


def test_wide_characters_are_not_counted_by_hand() -> None:
    assert changed_cells(Text("作业 1"), Text("作业 2")) is None


def test_rows_of_pieces_compare_piece_by_piece() -> None:
    old = (("  -3s   41 ", "dim"), ("WWW", "yellow"), ("MMMMMMM", "green"))
    grown = (("  -3s   41 ", "dim"), ("WW", "yellow"), ("MMMMMMMM", "green"))
    assert changed_cells(old, grown) == (13, 14)
    recoloured = (("  -3s   41 ", "dim"), ("WWW", "red"), ("MMMMMMM", "green"))
    assert changed_cells(old, recoloured) == (11, 14)
    shorter = (("  -3s   41 ", "dim"), ("WWW", "yellow"))
    assert changed_cells(old, shorter) == (14, 21)


def test_a_row_that_changed_from_text_to_pieces_is_redrawn_whole() -> None:
    assert changed_cells(Text("no steps yet"), (("no steps yet", ""),)) is None


def _cells(row, width: int) -> list[tuple[str, str]]:
    """A row as the terminal shows it: each cell's character and style, padded to ``width``."""
    if isinstance(row, tuple):
        cells = [(char, style) for text, style in row for char in text]
    else:
        styles = [[str(row.style)] for _ in row.plain]
        for span in row.spans:
            for index in range(span.start, min(span.end, len(row.plain))):
                styles[index].append(str(span.style))
        cells = [(char, "+".join(style)) for char, style in zip(row.plain, styles, strict=True)]
    return cells + [(" ", "pad")] * (width - len(cells))


def test_every_changed_cell_is_inside_the_span_given() -> None:
    """Random rows of both kinds, each changed at random (a fixed seed: the same cases every run)."""
    import random

    chooser = random.Random(33)
    alphabet, styles = "ab 1%", ("", "dim", "green", "red")
    spans_given = 0
    for _ in range(3000):
        if chooser.random() < 0.5:
            old = tuple(
                (
                    "".join(chooser.choice(alphabet) for _ in range(chooser.randint(1, 4))),
                    chooser.choice(styles),
                )
                for _ in range(chooser.randint(1, 4))
            )
            new = list(old)
            for _ in range(chooser.randint(1, 2)):
                index = chooser.randrange(len(new))
                text = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 4)))
                new[index] = (text, chooser.choice(styles) if chooser.random() < 0.3 else new[index][1])
            new_row: object = tuple(new)
        else:
            plain = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(1, 12)))
            old = Text(plain)
            for _ in range(chooser.randint(0, 2)):
                start = chooser.randrange(len(plain))
                old.stylize(chooser.choice(styles[1:]), start, chooser.randint(start + 1, len(plain)))
            cut = chooser.randrange(len(plain) + 1)
            tail = "".join(chooser.choice(alphabet) for _ in range(chooser.randint(0, 3)))
            new_row = Text(plain[:cut] + tail + plain[cut + chooser.randint(0, 2) :])
            for span in old.spans if chooser.random() < 0.8 else []:
                new_row.stylize(span.style, span.start, min(span.end, len(new_row.plain)))
        span = changed_cells(old, new_row)  # type: ignore[arg-type]
        before, after = _cells(old, 24), _cells(new_row, 24)
        differing = [x for x in range(24) if before[x] != after[x]]
        if span is not None and differing:
            spans_given += 1
            assert span[0] <= differing[0] and differing[-1] < span[1], (old, new_row, span, differing)
    assert spans_given > 1500, "most changes get a span: a function that always said None would pass"
