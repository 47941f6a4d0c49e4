"""What other languages' habits write where Mica writes something else, as the
analyzer and the parser tell it (the lexer's own slips, '"text"', '!=', '&&',
'||' and '!', are lexical.py's; the parser's, '==', 'x++', 'x += 1' and a
missing 'do' or 'then', lark_parser.py's)."""

from __future__ import annotations

# A name other languages give what Mica names otherwise: suggested as a close name is.
OTHER_NAMES = {"True": "true", "False": "false", "print": "WriteLn", "println": "WriteLn", "printf": "Write",
               "puts": "WriteLn", "len": "Length"}

RETURN_HELP = "Mica has no 'return': a function's value is what it assigns to 'result', and 'exit' leaves a routine"
