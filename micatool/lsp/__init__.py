"""micatool lsp: the language server (LSP 3.17 over stdio, on pygls).

An editor gets from the compiler's own front end what the compiler knows:
diagnostics as `micatool check` gives them, the types and shapes the analyzer
gave every name and expression, where each name is declared and used, the
shape bindings of each call of a shape-generic routine, and the canonical
layout of `micatool fmt`.

    server.py     the protocol: each request handed to the part that answers it
    document.py   one open file checked: its tree, analysis, diagnostics and names
    answers.py    hover, definition, references, rename, completion, signature
                  help, symbols, semantic tokens, inlay hints, quick fixes
"""
