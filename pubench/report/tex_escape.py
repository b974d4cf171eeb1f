"""Text escaped for LaTeX (pdflatex with utf8 input and the default fonts): its special
characters, the symbols the reports print, Greek letters as math."""

from __future__ import annotations

import re
import unicodedata

_TEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                "~": r"\~{}", "^": r"\^{}", "\\": r"\textbackslash{}",
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
                # beyond what pdflatex's utf8 input knows with the default fonts:
                "±": r"\ensuremath{\pm}", "†": r"\ensuremath{\dagger}", "‡": r"\ensuremath{\ddagger}",
                "✓": r"\ensuremath{\surd}", "◊": r"\ensuremath{\diamond}",
                "↓": r"\ensuremath{\downarrow}", "↑": r"\ensuremath{\uparrow}", "→": r"\ensuremath{\to}",
                "≤": r"\ensuremath{\le}", "≥": r"\ensuremath{\ge}", "≈": r"\ensuremath{\approx}",
                "−": r"\ensuremath{-}", "×": r"\ensuremath{\times}", "∈": r"\ensuremath{\in}",
                "—": "---", "–": "--", "…": r"\dots{}", "∞": r"\ensuremath{\infty}"}


_GREEK_CAPITALS_IN_MATH = {"Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi", "Psi",
                           "Omega"}


def _unicode(ch: str) -> str:
    """A character outside ASCII: Greek letters as math, Latin-1 as is (utf8 input handles
    it), anything else spelled out rather than failing the compilation."""
    name = unicodedata.name(ch, "")
    if name.startswith("GREEK ") and " LETTER " in name:
        letter = name.rsplit(" ", 1)[1].lower().replace("lamda", "lambda")
        if letter == "omicron":
            return "O" if "CAPITAL" in name else "o"
        if "CAPITAL" not in name:
            return r"\ensuremath{\%s}" % letter
        letter = letter.capitalize()
        return r"\ensuremath{\%s}" % letter if letter in _GREEK_CAPITALS_IN_MATH else letter[0].upper()
    if ord(ch) < 256:
        return ch
    return r"\texttt{[U+%04X]}" % ord(ch)


_CODE = re.compile(r"`([^`\n]+)`")  # a markdown code span: `pubench run ...`


def escape_tex(text: object) -> str:
    """``text`` escaped; a markdown code span (`x`) becomes \\texttt{x} rather than TeX's quotes."""
    parts = _CODE.split(str(text))  # even indices: prose, odd: code spans
    return "".join(r"\texttt{%s}" % p.translate(_CODE_TABLE) if i % 2 else _escape(p) for i, p in enumerate(parts))


class _Table(dict):
    """str.translate's table: the special characters, and every other non-ASCII character
    looked up once (a report escapes half a million characters)."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        out = self[code] = _TEX_SPECIAL.get(ch) or (_unicode(ch) if code > 127 else ch)
        return out


_TABLE = _Table({ord(k): v for k, v in _TEX_SPECIAL.items()})
# In a code span the typewriter font's own glyphs: with the default OT1 encoding \textbar, \{ and
# the like fall back to a math font in \texttt ("Font shape OMS/cmtt/m/n undefined"); cmtt has
# every ASCII character at its code point.
_CODE_TABLE = _Table({ord(k): v for k, v in _TEX_SPECIAL.items()}
                     | {ord(ch): r"\char%d{}" % ord(ch) for ch in "|<>{}\\~^"})


def _escape(text: str) -> str:
    return text.translate(_TABLE)
