"""The jinja2 templates of the C text (templates/): the program's frame."""

from __future__ import annotations

from importlib import resources

import jinja2

templates = jinja2.Environment(
    loader=jinja2.FunctionLoader(lambda name: resources.files(__package__).joinpath("templates", name).read_text()),
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
    undefined=jinja2.StrictUndefined,
)
