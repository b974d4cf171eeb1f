"""YAML through libyaml's C loader where PyYAML was built with it (10-20x faster than the
pure-Python ``yaml.safe_load``; the same safe constructors, so the same Python objects), and
the reading of the registry's YAML files (:func:`read_yaml`: any problem is a
:class:`~pubench.errors.SpecError` naming the file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pubench.errors import SpecError

try:
    SafeLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML without libyaml
    SafeLoader = yaml.SafeLoader


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, with the C loader when there is one."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a safe loader


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; :class:`SpecError` when it cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise SpecError(str(path), "(encoding)", f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise SpecError(str(path), "(file)", e.strerror or str(e)) from None


def parse_mapping(text: str, path: Path) -> dict[str, Any]:
    """``text`` (the content of ``path``) as a YAML mapping of plain data
    (:func:`pubench.utils.plaindata.data_problem`); :class:`SpecError` otherwise."""
    from pubench.utils.plaindata import data_problem

    data = parse_yaml(text, path)
    if not isinstance(data, dict):
        raise SpecError(str(path), "(top level)", "expected a mapping")
    problem = data_problem(data)
    if problem is not None:
        raise SpecError(str(path), *problem)
    return data


def parse_yaml(text: str, path: Path | str) -> Any:
    """``text`` (the content of ``path``) parsed; :class:`SpecError` when it does not parse or
    holds a value its tag cannot build (``!!int abc``, a date ``2026-02-30``)."""
    try:
        return safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError(str(path), "(yaml)", yaml_problem(e)) from None
    except Exception as e:  # noqa: BLE001 - the safe constructors raise ValueError, KeyError, ... for a bad value
        raise SpecError(str(path), "(yaml)", unbuildable_value(text, e)) from None


def yaml_problem(error: yaml.YAMLError) -> str:
    """A parse error in one line, whole: ``line 3, column 5: did not find expected ',' or '}' (while
    parsing a flow mapping that starts at line 2, column 9)``, without the parser's ``in "<unicode
    string>"`` and never cut mid-word."""
    if not isinstance(error, yaml.MarkedYAMLError):
        return " ".join(str(error).split()) or type(error).__name__

    def at(mark) -> str:
        return f"line {mark.line + 1}, column {mark.column + 1}"

    text = " ".join(str(error.problem or "cannot parse").split())
    if error.problem_mark is not None:
        text = f"{at(error.problem_mark)}: {text}"
    if error.context:
        context = " ".join(error.context.split())
        text += f" ({context}" + (f" that starts at {at(error.context_mark)}" if error.context_mark is not None
                                  else "") + ")"
    return text


class NotYamlValue(ValueError):
    """A command-line value (``--set``, ``--add-row``) that does not parse, or holds a scalar its
    tag cannot build; its message is one line."""


def load_value(raw: str) -> Any:
    """``raw``, a value given on the command line, parsed as YAML; :class:`NotYamlValue` with one
    line (``the value is not YAML (...)``, ``line 1: 'abc' is not a valid !!int``) otherwise.
    Whether the value is plain data is the caller's check (:func:`pubench.utils.plaindata.data_problem`)."""
    try:
        return safe_load(raw)
    except yaml.YAMLError as e:
        raise NotYamlValue(f"the value is not YAML ({yaml_problem(e)})") from None
    except Exception as e:  # noqa: BLE001 - the safe constructors raise ValueError, KeyError, ... for a bad value
        raise NotYamlValue(unbuildable_value(raw, e)) from None


def unbuildable_value(text: str, error: BaseException) -> str:
    """Which scalar of ``text`` the safe constructors cannot build, and why, for a message:
    ``line 5: 'abc' is not a valid !!int (invalid literal ...)``."""
    why = " ".join(str(error).split())[:120] or type(error).__name__
    try:
        root = yaml.compose(text, Loader=SafeLoader)
    except Exception:  # noqa: BLE001 - then no line can be named
        return f"a value cannot be read ({why})"
    builder = yaml.SafeLoader("")
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                builder.construct_object(node)
            except Exception as e:  # noqa: BLE001 - the value the whole document failed on
                tag = node.tag.replace("tag:yaml.org,2002:", "!!")
                shown = node.value if len(node.value) <= 40 else node.value[:40] + "..."
                # a ValueError says what is wrong; a KeyError or AttributeError only shows the constructor's insides
                why = f" ({' '.join(str(e).split())[:120]})" if isinstance(e, ValueError) else ""
                return f"line {node.start_mark.line + 1}: {shown!r} is not a valid {tag}{why}"
        elif isinstance(node, yaml.MappingNode):
            stack.extend(reversed([n for pair in node.value for n in pair]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return f"a value cannot be read ({why})"


def read_yaml(path: Path) -> dict[str, Any]:
    """The YAML mapping in ``path``; :class:`SpecError` naming the file when it is none."""
    return parse_mapping(read_text(path), path)


def key_line(text: str, key: str) -> tuple[int | None, bool]:
    """``(line, exact)``: the 1-based line of the dotted ``key`` (``reported.cells[2].row``,
    ``tiers.reduced.unavailable.A|x``) in the YAML ``text``, found through the node marks; where
    the whole path is not there (a missing key), the line of its deepest part that is, with
    ``exact`` False. ``(None, False)`` when not even the first part is found or the text does not
    parse. Keys may hold dots themselves (``alpha=0.5``): the longest key that fits is taken."""
    try:
        node = yaml.compose(text, Loader=SafeLoader)
    except yaml.YAMLError:
        return None, False
    rest, line = key, None
    while rest and node is not None:
        if isinstance(node, yaml.MappingNode):
            best = None
            for k, v in node.value:
                name = str(k.value) if isinstance(k, yaml.ScalarNode) else None
                if name is not None and (rest == name or rest.startswith(name + ".") or rest.startswith(name + "[")):
                    if best is None or len(name) > len(best[0]):
                        best = (name, k, v)
            if best is None:
                return line, False
            name, k, node = best
            line, rest = k.start_mark.line + 1, rest[len(name):].removeprefix(".")
        elif isinstance(node, yaml.SequenceNode) and rest.startswith("["):
            index, _, after = rest[1:].partition("]")
            if not index.isdigit() or int(index) >= len(node.value):
                return line, False
            node = node.value[int(index)]
            line, rest = node.start_mark.line + 1, after.removeprefix(".")
        else:
            return line, False
    return line, not rest


def problem_line(e: SpecError) -> str:
    """A :class:`SpecError` as ``file:line: key: problem`` (the line of the key where the file has
    it; ``near line N`` when only a part of the key's path is there, e.g. a missing key)."""
    try:
        text = Path(e.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return str(e)
    line, exact = key_line(text, e.key) if not e.key.startswith("(") else (None, False)
    if line is None:
        return str(e)
    return f"{e.file}:{line}: {e.key}: {e.problem}" + ("" if exact else f" (near line {line})")
