"""Top-down pictures of the numpy grid suites (T-Maze, Meta-Frozen-Lake, Key-To-Door, MazeRunner).

gymnasium's ``rgb_array`` render mode with numpy alone (no pygame): an env paints its cells into a
:class:`GridPicture` and returns its ``(height, width, 3)`` uint8 pixels. Cells are squares with an even
number of pixels, and the optional band above the grid is even too, so every picture has even sides (mp4
encoders need them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RGB = tuple[int, int, int]

WALL: RGB = (38, 38, 46)
FLOOR: RGB = (226, 226, 220)
AGENT: RGB = (37, 99, 235)
GOAL: RGB = (34, 160, 70)
GOAL_LATER: RGB = (150, 210, 160)
"""A goal that is not the next one yet (MazeRunner's later goals)."""
WRONG: RGB = (205, 60, 55)
ICE: RGB = (205, 230, 246)
HOLE: RGB = (24, 44, 112)
KEY: RGB = (232, 184, 28)
DOOR: RGB = (132, 78, 36)
PENDING: RGB = (150, 150, 150)
"""Band segments of attempts not played yet, and the unfilled part of a time bar."""

LONGEST_SIDE = 384
"""Pixels the longer side of the grid aims for (cells stay between 4 and 32 pixels)."""


def _even(pixels: int) -> int:
    return max(2, pixels - pixels % 2)


def cell_pixels(rows: int, cols: int, longest: int = LONGEST_SIDE) -> int:
    """Side of one cell: about ``longest / max(rows, cols)``, even, at least 4 and at most 32."""
    return _even(min(32, max(4, longest // max(rows, cols, 1))))


class GridPicture:
    """A ``rows`` x ``cols`` grid of square cells, with an optional band above it for progress marks.

    Args:
        rows: cells from top to bottom.
        cols: cells from left to right.
        band: reserve a strip of half a cell above the grid (:meth:`band_segments`, :meth:`band_progress`).
        background: colour of everything not painted (walls).
    """

    def __init__(self, rows: int, cols: int, *, band: bool = False, background: RGB = WALL):
        self.cell = cell_pixels(rows, cols)
        self.top = _even(self.cell // 2) if band else 0
        self.pixels = np.empty((self.top + rows * self.cell, cols * self.cell, 3), dtype=np.uint8)
        self.pixels[:] = background

    def _box(self, row: int, col: int, inset: int) -> tuple[slice, slice]:
        y, x = self.top + row * self.cell, col * self.cell
        return slice(y + inset, y + self.cell - inset), slice(x + inset, x + self.cell - inset)

    def tile(self, row: int, col: int, colour: RGB, *, inset: int = 1) -> None:
        """Fills a cell, leaving ``inset`` pixels of the background around it (the grid lines)."""
        self.pixels[self._box(row, col, inset)] = colour

    def half_tile(self, row: int, col: int, colour: RGB, *, upper: bool) -> None:
        """Fills the upper or lower half of a cell (inside its grid line)."""
        rows, cols = self._box(row, col, 1)
        middle = (rows.start + rows.stop) // 2
        self.pixels[slice(rows.start, middle) if upper else slice(middle, rows.stop), cols] = colour

    def disc(self, row: int, col: int, colour: RGB, *, radius: float = 0.34) -> None:
        """Paints a disc of ``radius`` cells in the middle of a cell (the agent, a key)."""
        rows, cols = self._box(row, col, 0)
        offsets = np.arange(self.cell) - (self.cell - 1) / 2
        inside = offsets[:, None] ** 2 + offsets[None, :] ** 2 <= (radius * self.cell) ** 2
        self.pixels[rows, cols][inside] = colour

    def band_segments(self, colours: Sequence[RGB]) -> None:
        """Splits the band into one segment per colour, left to right, with a one-pixel gap between them."""
        if not self.top or not colours:
            return
        edges = np.linspace(0, self.pixels.shape[1], len(colours) + 1).round().astype(int)
        for colour, left, right in zip(colours, edges[:-1], edges[1:], strict=True):
            self.pixels[1 : self.top - 1, left + 1 : max(right - 1, left + 2)] = colour

    def band_progress(self, fraction: float, colour: RGB) -> None:
        """Draws the band as a bar filled to ``fraction`` (0..1) of its width."""
        if not self.top:
            return
        width = self.pixels.shape[1]
        filled = round(min(max(fraction, 0.0), 1.0) * (width - 2))
        self.pixels[1 : self.top - 1, 1 : width - 1] = PENDING
        self.pixels[1 : self.top - 1, 1 : 1 + filled] = colour
