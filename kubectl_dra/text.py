"""Text for people: counted nouns ("1 pod", "2 pods", never "1 pods" or "pod(s)"), terminal-safe
strings, and prose wrapped to a width a person reads."""

from __future__ import annotations

import re
import secrets

IRREGULAR = {"entry": "entries", "match": "matches", "NodeClass": "NodeClasses"}


def plural(n: int, singular: str, many: str | None = None) -> str:
    """``n`` and the noun in the form the number takes; ``many`` for a plural not made by "s"."""
    if n == 1:
        return f"{n} {singular}"
    return f"{n} {many or IRREGULAR.get(singular) or singular + 's'}"


# Terminal safety. Names, messages, labels and cgroup file contents come from the API, from files
# and from the node: an escape sequence in one of them must never reach the terminal (kubectl's
# printers escape since CVE-2021-25743, cli-runtime printers.EscapeTerminal: ESC as "^[", CR as
# "\r"). The same rule here, applied to every control character kubectl's two do not cover: other
# C0 controls in caret notation (^G for BEL, ^? for DEL), C1 controls (U+0080-U+009F, which
# terminals also read as escapes: U+009B is a CSI) as \u009b, and a lone surrogate (a byte that was
# not UTF-8, or an escape in a JSON file) as \xNN or \udXXX so it cannot fail the write. Newline and
# tab are the text's own layout and stay.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _escaped(ch: str) -> str:
    code = ord(ch)
    if ch == "\r":
        return "\\r"
    if code < 0x20:
        return "^" + chr(code + 0x40)  # ESC -> ^[
    if code == 0x7F:
        return "^?"
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte that did not decode
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def terminal_safe(text: str) -> str:
    """``text`` with no control character but newline and tab (see above); the same string when
    there is none, so the common case costs one scan."""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: _escaped(m.group()), text)


# Colour. Printers mark colour with this per-process string instead of ESC; the output boundary
# (Environment.write) escapes every control character and only then turns the marks into ESC. Data
# cannot forge a mark: it would have to guess a random string chosen when the program started.
COLOR_MARK = "\ue000" + secrets.token_hex(8) + "\ue001"
_COLOR = re.compile(re.escape(COLOR_MARK) + r"\[[0-9;]*m")


def colored(codes: str, text: str) -> str:
    """``text`` in SGR ``codes`` (e.g. "31" red), reset after it."""
    return f"{COLOR_MARK}[{codes}m{text}{COLOR_MARK}[0m"


def width(text: str) -> int:
    """Printed width of one line: colour takes no room."""
    return len(_COLOR.sub("", text)) if COLOR_MARK in text else len(text)


def to_terminal(text: str) -> str:
    """What is written: every control character escaped, then the colour marks made real."""
    text = terminal_safe(text)
    return text.replace(COLOR_MARK, "\x1b") if COLOR_MARK in text else text


# Prose (findings, reasons, notes below a table) is wrapped, as a person reads it; a word longer than
# the line (a path, an ID) is never cut.
PROSE_WIDTH = 120
TABLE_WIDTH = 120  # what a default table aims at (kubectl get's views fit it), and rows like ``file = value   why``
HANGING_INDENT = 4


def wrap(line: str, limit: int = PROSE_WIDTH, indent: str | None = None) -> list[str]:
    """One line as lines of at most ``limit`` printed columns, broken at spaces; continuation lines
    start with ``indent`` (default: the line's own indentation and four spaces)."""
    if width(line) <= limit:
        return [line]
    body = line.lstrip(" ")
    lead = line[:len(line) - len(body)]
    more = lead + " " * HANGING_INDENT if indent is None else indent
    pieces = re.split(r"( +)", body)  # word, spaces, word, ...: the spaces between words are kept
    out, current = [], lead + pieces[0]
    for spaces, word in zip(pieces[1::2], pieces[2::2]):
        # break before a word that fits a line of its own; one that would not (a path, an ID) stays
        if width(current + spaces + word) > limit and current.strip() and width(more + word) <= limit:
            out.append(current)
            current = more + word
        else:
            current += spaces + word
    out.append(current)
    return [piece.rstrip() for piece in out]


def wrap_lines(lines: list[str], limit: int = PROSE_WIDTH) -> list[str]:
    return [piece for line in lines for piece in wrap(line, limit)]
