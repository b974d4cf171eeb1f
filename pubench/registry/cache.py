"""A small on-disk cache of what the read-only commands recompute on every call: parsed and
validated specs (:func:`pubench.registry.loader.load_spec`), the unit names of the
registries (:mod:`pubench.registry.units`) and task config verdicts (``pubench coverage``).

Every entry is keyed by the SHA-256 of everything its value depends on (the file's content,
the presets and PU data set catalogue it expands, the source of the code that builds it),
so an edit of any of them misses and rebuilds: nothing is ever invalidated by hand. Entries
live in ``$PUBENCH_CACHE/meta/<kind>/<key>.json`` (default ``<home>/.cache``); a writer
writes a temp file and renames it over the entry, so two processes writing one entry at
once (they write the same bytes) leave a whole file, and a reader never sees half of one.
An entry that cannot be read is rebuilt. ``PUBENCH_META_CACHE=0`` turns the cache off.

Entries are JSON, never pickles: the cache folder is often on a shared file system, and
reading a file there must not run code. What JSON cannot say (tuples, bytes, sets, dates,
dict keys that are not strings, the dataclasses of a parsed spec) is written as an object
tagged ``"!"`` and rebuilt on load; a dataclass is rebuilt only when it is one of those
:func:`register` admitted, from its fields, so a planted file can at most be a wrong entry
of plain data (an unknown tag or a file that is not JSON is a miss).
"""

from __future__ import annotations

import base64
import collections.abc
import dataclasses
import datetime
import functools
import hashlib
import json
import os
import sys
import tempfile
import types
import typing
from pathlib import Path
from typing import Any, Iterable

FORMAT = 2  # bump when what an entry holds changes shape (2: JSON instead of pickles)
TAG = "!"  # the key that marks an encoded value that is not plain JSON
_TAG_JSON = json.dumps(TAG).encode()


def enabled() -> bool:
    return os.environ.get("PUBENCH_META_CACHE", "1") != "0"


def cache_root() -> Path:
    from pubench.paths import project_root

    return Path(os.environ.get("PUBENCH_CACHE") or project_root() / ".cache") / "meta"


_ROOT = Path(__file__).resolve().parents[2]  # the checkout: fingerprints name files relative to it
_memo: dict[tuple[str, str], bytes] = {}  # this process's entries (encoded: every get is a fresh object)
_stamps: dict[tuple, str] = {}
_classes: dict[str, type] = {}  # the dataclasses an entry may hold, by name


def register(*classes: type) -> None:
    """Admit these dataclasses in entries (rebuilt from their fields on load)."""
    for cls in classes:
        if not dataclasses.is_dataclass(cls) or _classes.get(cls.__name__, cls) is not cls:
            raise TypeError(f"cannot register {cls!r} in the cache")
        _classes[cls.__name__] = cls


def files_fingerprint(files: Iterable[Path], salt: str = "") -> str:
    """SHA-256 of the names and contents of ``files`` (memoized on their mtime and size); files
    inside the checkout are named relative to it, so two checkouts of one commit agree."""
    files = sorted(Path(f) for f in files)
    stamp = [salt]
    for f in files:
        try:
            st = f.stat()
            stamp.append((str(f), st.st_mtime_ns, st.st_size))
        except OSError:
            stamp.append((str(f), None, None))
    key = tuple(stamp)
    if key not in _stamps:
        h = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}|{salt}".encode())
        for f in files:
            h.update(_name(f).encode() + b"\0")
            try:
                h.update(f.read_bytes())
            except OSError:
                h.update(b"<missing>")
            h.update(b"\0")
        _stamps[key] = h.hexdigest()
    return _stamps[key]


def _name(f: Path) -> str:
    try:
        return f.resolve().relative_to(_ROOT).as_posix()
    except ValueError:
        return str(f)


def key_of(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def get(kind: str, key: str, expect: Any = object) -> Any | None:
    """The value stored under ``(kind, key)``, or None (missing, unreadable, not of the type
    ``expect`` names, e.g. ``dict[str, list[str]]``, cache off)."""
    if not enabled():
        return None
    blob = _memo.get((kind, key))
    if blob is None:
        try:
            blob = (cache_root() / kind / f"{key}.json").read_bytes()
        except OSError:
            return None
    try:
        value = loads(blob)
    except Exception:  # noqa: BLE001 - a torn or foreign file is a miss
        return None
    if not conforms(value, expect):
        return None
    _memo[(kind, key)] = blob
    return value


def put(kind: str, key: str, value: Any) -> None:
    """Store ``value``; a cache folder that cannot be written is no error (the next call recomputes)."""
    if not enabled():
        return
    blob = dumps(value)
    _memo[(kind, key)] = blob
    folder = cache_root() / kind
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            os.replace(tmp, folder / f"{key}.json")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass


def dumps(value: Any) -> bytes:
    """``value`` as the JSON of an entry; TypeError for what an entry cannot hold."""
    return json.dumps(_encode(value), separators=(",", ":")).encode()


def loads(blob: bytes) -> Any:
    """The value :func:`dumps` wrote; ValueError for a tag it does not know."""
    from pubench.utils.io import loads_json

    if _TAG_JSON not in blob:  # no tagged value: plain JSON, parsed at C speed without a hook per object
        return loads_json(blob)
    return json.loads(blob, object_hook=_decode)


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        if TAG not in value and all(type(k) is str for k in value):
            return {k: _encode(v) for k, v in value.items()}
        return {TAG: "dict", "items": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, tuple):
        return {TAG: "tuple", "items": [_encode(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {TAG: type(value).__name__, "items": [_encode(v) for v in value]}
    if isinstance(value, bytes):
        return {TAG: "bytes", "base64": base64.b64encode(value).decode()}
    if isinstance(value, (datetime.datetime, datetime.date)):
        return {TAG: type(value).__name__, "iso": value.isoformat()}
    cls = type(value)
    if _classes.get(cls.__name__) is cls:
        return {TAG: cls.__name__, "fields": {f.name: _encode(getattr(value, f.name))
                                              for f in dataclasses.fields(value) if f.init}}
    raise TypeError(f"a cache entry cannot hold a {cls.__name__}")


_DECODERS = {
    "dict": lambda d: {k: v for k, v in d["items"]},
    "tuple": lambda d: tuple(d["items"]),
    "set": lambda d: set(d["items"]),
    "frozenset": lambda d: frozenset(d["items"]),
    "bytes": lambda d: base64.b64decode(d["base64"], validate=True),
    "datetime": lambda d: datetime.datetime.fromisoformat(d["iso"]),
    "date": lambda d: datetime.date.fromisoformat(d["iso"]),
}


def _decode(d: dict[str, Any]) -> Any:
    tag = d.get(TAG)
    if tag is None:
        return d
    if tag in _DECODERS:
        return _DECODERS[tag](d)
    if tag in _classes:
        cls, fields = _classes[tag], d["fields"]
        hints = _field_types(cls)
        for name, value in fields.items():
            if name not in hints or not conforms(value, hints[name]):
                raise ValueError(f"field {name!r} of {tag} in a cache entry is not a {hints.get(name)}")
        return cls(**fields)
    raise ValueError(f"unknown tag {tag!r} in a cache entry")


@functools.lru_cache(maxsize=None)
def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the type ``hint`` names, containers and unions included (a
    planted entry whose fields have other types is a miss, not a traceback where they are
    read). ``Any`` and a ``Callable`` hint admit anything; a bool is no int, an int is a float."""
    if hint is Any or hint is object:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is collections.abc.Callable or hint is collections.abc.Callable:
        return value is None or callable(value)
    if origin is None:
        if hint is type(None) or hint is None:
            return value is None
        if hint is float:
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        if hint is int:
            return isinstance(value, int) and not isinstance(value, bool)
        return isinstance(value, hint)
    if not isinstance(value, origin):
        return False
    if origin in (list, set, frozenset):
        return all(conforms(v, args[0]) for v in value) if args else True
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args))
    if origin is dict:
        return all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()) if args else True
    return True
