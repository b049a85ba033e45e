"""Small settings files (``.json`` or ``.toml``) read into a dict, with one-line errors.

Column mappings ([`jaxid.data.load_mapping`][jaxid.data.load_mapping]) and transmissions
([`jaxid.model.transmission.load`][jaxid.model.transmission.load]) are both such files; this is their one reader, so that
both say the same thing about a missing file, a directory, an unreadable file or a syntax error.
Standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_table(path, what: str, error: type[Exception] = ValueError) -> dict:
    """The top-level table of the ``.json`` or ``.toml`` file ``path``.

    ``what`` names the file's role in messages ("a column mapping", "a transmission file");
    ``error`` is the exception class raised, with a message that starts with the path, for a
    suffix other than .json/.toml, a missing file, a directory, an unreadable or non-UTF-8 file,
    a syntax error, or content that is not a table.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise error(f"{path}: {what} is a .json or .toml file, not '{path.suffix}'")
    if path.is_dir():
        raise error(f"{path}: is a directory, not a file")
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except PermissionError:
        raise error(f"{path}: cannot read the file (permission denied)") from None
    except UnicodeDecodeError as e:
        raise error(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise error(f"{path}: cannot read the file ({e.strerror or e})") from None
    try:
        if suffix == ".json":
            content = json.loads(text)
        else:
            import tomllib

            content = tomllib.loads(text)
    except ValueError as e:  # JSONDecodeError and TOMLDecodeError are ValueErrors
        raise error(f"{path}: not valid {suffix[1:].upper()} ({e})") from None
    if not isinstance(content, dict):
        raise error(f"{path}: expected a table (keys and values) at the top level, not a {type(content).__name__}")
    return content
