"""A generated block of a Markdown page: the text between two marker lines, which a command rewrites.

The configuration reference (``amago config reference --update``) and the gin mapping (``amago migrate-gin
--update``) each own one block in a docs page; a test compares the block with what the command generates, so the
page cannot drift from its source.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from amago_core.cli.output import fail
from amago_core.io import atomic_write_text


@dataclass(frozen=True)
class GeneratedBlock:
    """The marker lines around one generated block.

    Attributes:
        begin: the line before the generated text.
        end: the line after it.
        what: what the block holds, for messages ("the reference").
    """

    begin: str
    end: str
    what: str

    def bounds(self, page: str) -> tuple[int, int]:
        """Where the generated text of ``page`` starts and ends.

        Raises:
            ValueError: the page lacks one of the marker lines, or has them out of order; says where they go.
        """
        begin = page.find(self.begin + "\n")
        end = page.find(self.end, begin + 1)
        if begin < 0 or end < 0:
            msg = (
                f"the page has no {self.begin!r} ... {self.end!r} block; put the two marker lines, each on a line "
                f"of its own, where {self.what} should go"
            )
            raise ValueError(msg)
        return begin + len(self.begin) + 1, end

    def replace(self, page: str, generated: str) -> str:
        """``page`` with its generated text replaced by ``generated`` (see :meth:`bounds` for the errors)."""
        start, end = self.bounds(page)
        return page[:start] + generated + page[end:]

    def text(self, page: str) -> str:
        """The generated text of ``page`` (see :meth:`bounds` for the errors)."""
        start, end = self.bounds(page)
        return page[start:end]


def write_generated(generated: str, block: GeneratedBlock, page: Path | None) -> None:
    """Prints ``generated``, or (``--update PAGE``) rewrites ``block`` of ``page`` with it, saying whether it changed.

    Exits 2 with one line when the page cannot be read or lacks the block's marker lines.
    """
    if page is None:
        sys.stdout.write(generated)
        return
    if page.is_symlink() or (page.is_file() and page.stat().st_nlink > 1):
        # Rewriting a link would change the file it shares its content with, wherever that lies.
        fail(f"{page} is a link (symbolic or hard); pass the page itself, a plain file, to --update")
    try:
        text = page.read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"cannot read {page}: {exc.strerror or exc}; pass an existing Markdown page to --update")
    try:
        updated = block.replace(text, generated)
    except ValueError as exc:
        fail(f"{page}: {exc}")
    if updated == text:
        sys.stderr.write(f"{page} is up to date\n")
        return
    atomic_write_text(page, updated)  # renamed into place: a crash leaves the old page, never half of one
    sys.stderr.write(f"updated {block.what} in {page}\n")
