"""Subscripts and powers in the report's texts, written as MathML instead of TeX-like source.

Claims, captions and reconstruction notes write mathematics the way a plain-text paper does:
``s_{k−1}``, ``x_{N/2}``, ``r^{n−1}``, ``u^{(j)}_n``, ``T_d``; Greek letters and operators are
already Unicode. :func:`math_markup` turns each such script into inline MathML (MathML Core,
which Chromium, Firefox and Safari render natively: the page stays one offline file) and
leaves everything else as text.

Safety: the result is :class:`~markupsafe.Markup` built only from escaped pieces — every
character of the input passes through :func:`markupsafe.escape` before it is placed inside a
MathML element — so the template's autoescaping stays the one defence against injection.

The subset recognised, deliberately small so that identifiers are left alone:

- a *base*: a Latin word before a braced or parenthesised script (``mean^(1−d)``); else
  one letter (Latin, Greek or ℓ) not preceded by a Latin letter, digit or ``_``
  (Greek letters are symbols of their own: ``Σγ_j`` is Σ times γ_j); a run of digits;
  or a closing ``)`` / ``]``;
- followed by one or more *scripts*: ``_`` (subscript) or ``^`` (power), each either a braced
  group ``{…}`` (balanced, may itself hold scripts), a power in parentheses ``^(…)`` as a
  plain-text paper writes it (``ρ^((d^k − 1)/(d − 1))``, ``N^(−s)``), or a single letter or
  digit run not followed by a lower-case letter, digit or ``_`` (``γ_jC_j`` is two
  products).
  So ``busy_capacity`` and ``ci_low`` stay as they are; ``u_3`` and ``d_j`` do not.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

__all__ = ["has_raw_scripts", "math_markup"]

_LETTER = r"A-Za-z\u0370-\u03ff\u2113"
#: A base: one letter that starts a word, a number, or a closing bracket.
_BASE = re.compile(rf"(?<![A-Za-z0-9_.])\d+(?:\.\d+)?|(?<![A-Za-z0-9_])[{_LETTER}]|[)\]]")
#: A base right after another scripted base (``γ_jC_j``): no look at what precedes it.
_BASE_NEXT = re.compile(rf"\d+(?:\.\d+)?|[{_LETTER}]|[)\]]")
#: An unbraced script: a single letter, or a (signed) digit run, ending the word.
_SHORT = re.compile(rf"(?:[−-]?\d+|[{_LETTER}])(?![a-z0-9_])")
#: A Latin word as the base of an explicit script, and one of its letters.
_WORD_BASE = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z]+")
_WORD_END = re.compile(r"[A-Za-z]")
#: What a number's base may hold before its last digit (``1.5^2``).
_NUMBER_CHAR = re.compile(r"[\d.]")
#: A token inside a script: a number, a letter run, or any other single character.
_TOKEN = re.compile(rf"\d+(?:\.\d+)?|[{_LETTER}]+|\s+|.", re.S)
#: What the report must never show once rendered: TeX-like scripts left as source.
RAW_SCRIPT = re.compile(
    rf"[_^]\{{|\^\(|(?<![A-Za-z0-9_])[{_LETTER}\d)][_^][{_LETTER}\d](?![a-z0-9_])"
)


def _braced(text: str, start: int) -> int | None:
    """The index just past the bracket matching the ``{`` or ``(`` at ``start`` (None if
    unbalanced)."""
    opening = text[start]
    closing = "}" if opening == "{" else ")"
    depth = 0
    for i in range(start, len(text)):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _scripts(text: str, pos: int) -> tuple[list[tuple[str, str]], int]:
    """The scripts ((``_`` or ``^``, raw content) pairs) starting at ``pos``, and where they end."""
    found: list[tuple[str, str]] = []
    while pos < len(text) - 1 and text[pos] in "_^":
        kind = text[pos]
        # A braced group, or a power written with parentheses (``N^(−s)``, plain-text style).
        if text[pos + 1] == "{" or (kind == "^" and text[pos + 1] == "("):
            end = _braced(text, pos + 1)
            if end is None or (end == pos + 3 and text[pos + 2] == "}"):
                break
            found.append((kind, text[pos + 2 : end - 1]))
            pos = end
            continue
        short = _SHORT.match(text, pos + 1)
        if short is None:
            break
        found.append((kind, short.group()))
        pos = short.end()
    return found, pos


def _token(token: str) -> str:
    """One token as a MathML element (escaped)."""
    if token[0].isdigit():
        return f"<mn>{escape(token)}</mn>"
    if re.fullmatch(f"[{_LETTER}]+", token):
        return f"<mi>{escape(token)}</mi>"
    return f"<mo>{escape(token)}</mo>"


def _row(text: str) -> str:
    """The content of a braced script as MathML tokens, its own scripts included."""
    parts: list[str] = []
    pos = 0
    while pos < len(text):
        node, end = _scripted(text, pos)
        if node is not None:
            parts.append(node)
            pos = end
            continue
        token = _TOKEN.match(text, pos)
        assert token is not None  # "." matches any character
        if not token.group().isspace():
            parts.append(_token(token.group()))
        pos = token.end()
    return "".join(parts) if len(parts) == 1 else "<mrow>" + "".join(parts) + "</mrow>"


def _scripted(
    text: str, pos: int, after_math: bool = False, word: bool = False
) -> tuple[str | None, int]:
    """A base with its scripts at ``pos`` as one MathML element, or (None, pos).

    ``after_math``: ``pos`` is just past another scripted base, so a letter there starts a
    new factor whatever precedes it. ``word``: the script is explicit (braced or in
    parentheses), so a whole Latin word may be its base (``mean^(1−d)``, ``max_{i}``).
    """
    base = (_BASE_NEXT if after_math else _BASE).match(text, pos)
    if word and base is not None and base.group().isalpha():
        base = _WORD_BASE.match(text, pos) or base
    if base is None:
        return None, pos
    scripts, end = _scripts(text, base.end())
    if not scripts:
        return None, pos
    node = _token(base.group())
    i = 0
    while i < len(scripts):
        kind, content = scripts[i]
        nxt = scripts[i + 1] if i + 1 < len(scripts) else None
        if nxt is not None and nxt[0] != kind:  # x_a^b or x^b_a: one msubsup
            sub, sup = (content, nxt[1]) if kind == "_" else (nxt[1], content)
            node = f"<msubsup>{node}{_row(sub)}{_row(sup)}</msubsup>"
            i += 2
            continue
        tag = "msub" if kind == "_" else "msup"
        node = f"<{tag}>{node}{_row(content)}</{tag}>"
        i += 1
    return node, end


def math_markup(text: object) -> Markup:
    """``text`` escaped, with each base-and-scripts written as inline MathML."""
    if isinstance(text, Markup):
        return text
    raw = "" if text is None else str(text)
    out: list[str] = []
    plain = 0
    pos = 0
    while pos < len(raw):
        if raw[pos] in "_^" and pos > 0:
            # Find the base just before the script (one character, or a run of digits).
            start = pos - 1
            if raw[start].isdigit():  # a number's base starts at its first digit ("1.5^2")
                while start > 0 and _NUMBER_CHAR.match(raw, start - 1):
                    start -= 1
                while not raw[start].isdigit():
                    start += 1
            word = raw[pos + 1 : pos + 2] in ("{", "(")
            if word and _WORD_END.match(raw, start):  # an explicit script on a word: mean^(1−d)
                while start > 0 and _WORD_END.match(raw, start - 1):
                    start -= 1
            after_math = start == plain and bool(out)
            node, end = _scripted(raw, start, after_math, word) if start >= plain else (None, pos)
            if node is not None:
                out.append(str(escape(raw[plain:start])))
                out.append(f'<math display="inline">{node}</math>')
                plain = pos = end
                continue
        pos += 1
    out.append(str(escape(raw[plain:])))
    return Markup("".join(out))


def has_raw_scripts(text: str) -> list[str]:
    """The TeX-like scripts left as source in ``text`` (visible text, not markup)."""
    return [m.group() for m in RAW_SCRIPT.finditer(text)]
