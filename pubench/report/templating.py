"""Jinja2 environments of the HTML site and the LaTeX reports.

The templates are files in ``pubench/report/templates/`` (shipped with the package), one per
page kind: ``report.html.j2``, ``spec.html.j2``, ``index.html.j2``, ``crossref.html.j2`` (all
extending ``base.html.j2``, whose ``<style>`` is ``style.css.j2``) and ``report.tex.j2`` (the
standalone document) / ``snippet.tex.j2`` (a table to ``\\input``), both built on the blocks
of ``body.tex.j2``. Python collects the numbers and texts of a report
(:mod:`pubench.report.html`, :mod:`pubench.report.latex`); the templates only lay them out.

**Your own templates.** Set ``PUBENCH_TEMPLATES`` to a folder (or several, separated by
``:``): a file there named like a packaged template replaces it; every packaged template is
also reachable as ``pubench/<name>``, so a template of yours can extend the packaged one and
override a block only::

    {% extends "pubench/report.html.j2" %}
    {% block style %}{{ super() }} body { font-family: Georgia, serif; }{% endblock %}

HTML is autoescaped (a spec's text never becomes markup); what Python already rendered as
markup comes in as :class:`markupsafe.Markup`. LaTeX templates use their own delimiters,
``\\VAR{...}`` for a value, ``\\BLOCK{...}`` for a statement and ``\\#{...}`` for a comment (no
``}`` inside), so that TeX's braces and ``%`` stay literal; every ``\\VAR{}`` is escaped for LaTeX
(:func:`pubench.report.latex.escape_tex`) unless it is already LaTeX (a :class:`Tex` string,
the output of the ``tex`` filter, or a macro's output marked ``|safe``).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

TEMPLATES_ENV = "PUBENCH_TEMPLATES"
PACKAGE_TEMPLATES = Path(__file__).resolve().parent / "templates"


class Tex(str):
    """A string that is already LaTeX: ``\\VAR{}`` prints it as it is."""

    __slots__ = ()


def user_folders() -> tuple[str, ...]:
    """The folders of ``$PUBENCH_TEMPLATES``, in order (empty when unset)."""
    return tuple(p for p in os.environ.get(TEMPLATES_ENV, "").split(os.pathsep) if p.strip())


def _loader(folders: tuple[str, ...]):
    from jinja2 import ChoiceLoader, FileSystemLoader, PrefixLoader

    package = FileSystemLoader(str(PACKAGE_TEMPLATES))
    return ChoiceLoader([*(FileSystemLoader(f) for f in folders), package, PrefixLoader({"pubench": package})])


@functools.lru_cache(maxsize=4)
def _html_env(folders: tuple[str, ...]):
    from jinja2 import Environment, StrictUndefined

    env = Environment(loader=_loader(folders), autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["code_spans"] = code_spans
    return env


def code_spans(value: object):
    """The ``code_spans`` filter of the HTML environment: ``value`` escaped, each markdown code
    span (`x`) as <code>x</code>; markup (a macro's output) is kept as it is."""
    import re

    from markupsafe import Markup, escape

    if isinstance(value, Markup):
        return value
    return Markup(re.sub(r"`([^`\n]+)`", r"<code>\1</code>", str(escape(value))))


def html_env():
    """The HTML environment (autoescape on), for the current ``$PUBENCH_TEMPLATES``."""
    return _html_env(user_folders())


def tex(value: object) -> Tex:
    """The ``tex`` filter, and what every ``\\VAR{}`` applies: ``value`` escaped for LaTeX; a
    :class:`Tex` string, or one marked ``|safe`` (a macro's output), is kept as it is."""
    from markupsafe import Markup

    from pubench.report.tex_escape import escape_tex

    if isinstance(value, Tex):
        return value
    return Tex(value) if isinstance(value, Markup) else Tex(escape_tex(value))


def _join(values, sep: str = "") -> Tex:
    """``join`` of the LaTeX environment: each value escaped unless it is LaTeX already (as
    jinja2's own ``join`` does under HTML autoescaping); the separator, written in the template,
    is LaTeX (``" & "``)."""
    return Tex(str(sep).join(tex(v) for v in values))


@functools.lru_cache(maxsize=4)
def _latex_env(folders: tuple[str, ...]):
    from jinja2 import Environment, StrictUndefined

    env = Environment(loader=_loader(folders), autoescape=False, undefined=StrictUndefined,
                      block_start_string=r"\BLOCK{", block_end_string="}",
                      variable_start_string=r"\VAR{", variable_end_string="}",
                      comment_start_string=r"\#{", comment_end_string="}",
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, finalize=tex)
    env.filters["tex"] = tex
    env.filters["join"] = _join
    return env


def latex_env():
    """The LaTeX environment (``\\VAR{}``, ``\\BLOCK{}``, ``\\#{}``; every value escaped), for the
    current ``$PUBENCH_TEMPLATES``."""
    return _latex_env(user_folders())


def render_html(name: str, **context) -> str:
    return html_env().get_template(name).render(**context)


def render_tex(name: str, **context) -> str:
    return latex_env().get_template(name).render(**context)
