"""Regular expressions (LANGUAGE.md section 11): Compile, IsMatch, Find, FindAll
and ReplaceAll on `regex` values, each one call of the engine in
runtime_c/mica_regex.c (RE2 syntax, a Pike VM: linear in the text).

Compile answers false for a malformed pattern and leaves the reason for
LastError; the matching calls take the line, to trap on a regex never compiled.
"""

from __future__ import annotations

from ..types import BOOLEAN, REGEX, STRING
from .checking import Lent
from .library import STRINGS, define_calls

define_calls({
    "Compile": ([STRING, Lent(REGEX)], BOOLEAN, "mica_regex_compile", False,
                "Compile(pattern : string; address re : regex) : boolean",
                "Compiles pattern into re; false for a malformed one, with the reason for LastError."),
    "IsMatch": ([REGEX, STRING], BOOLEAN, "mica_regex_is_match", True, "IsMatch(re : regex; s : string) : boolean",
                "Whether re matches anywhere in s."),
    "Find": ([REGEX, STRING, Lent(STRINGS)], BOOLEAN, "mica_regex_find", True,
             "Find(re : regex; s : string; address groups : array of string) : boolean",
             "The leftmost-first match of re in s into groups: [0] the whole match, [i] group i; false for none."),
    "ReplaceAll": ([REGEX, STRING, STRING], STRING, "mica_regex_replace_all", True,
                   "ReplaceAll(re : regex; s, template : string) : string",
                   "s with every match of re replaced by template, in which $1 is group 1's text and $0 the match."),
    "FindAll": ([REGEX, STRING], STRINGS, "mica_regex_find_all", True,
                "FindAll(re : regex; s : string) : array of string",
                "Every match of re in s, left to right, not overlapping."),
})
