"""Hostile strings the untrusted-input tests carry end to end (issue 19, item 3).

Markup that runs script if anything renders it as HTML, a string that ends a SQL literal, and
10 kB of Unicode that reorders, hides, stacks and widens text.
"""

from __future__ import annotations

MARKUP = '<img src=x onerror="window.__pwned=1;alert(1)">'
SQLISH = "'); drop table anomalies; --"
RLO, ZWSP, ZWJ, BOM = "\u202e", "\u200b", "\u200d", "\ufeff"
# Right-to-left override, zero-width space/joiner/no-break, an emoji ZWJ family and a flag,
# combining marks stacked on a letter, Arabic, CJK, a tag, an astral letter.
_PIECES = (f"{RLO}evil.exe ", f"a{ZWSP}b{ZWJ}c{BOM} ", f"👨{ZWJ}👩{ZWJ}👧 🇩🇪 ", "e" + "\u0301\u0308\u0323" * 6 + " ",
           "مرحبا ", "路由器 ", "</td><script>window.__pwned=1</script> ", "𝔘𝔫𝔦 ")


def unicode_10k() -> str:
    """At least 10 240 UTF-8 bytes of the pieces above, the same each time."""
    text, i = "", 0
    while len(text.encode()) < 10_240:
        text += _PIECES[i % len(_PIECES)]
        i += 1
    return text


HOSTILE = (MARKUP, SQLISH, unicode_10k())
