"""``vcr-transport config set`` and ``unset``: one setting of ``[tool.vcr_transport]`` in a pyproject.toml,
edited with a round-trip TOML library (tomlkit) and read back, or refused (``UnsafeEdit``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._config import check_settings
from .._exceptions import VcrTransportError
from .._registration import PYPROJECT_NAMES

__all__ = ["UnsafeEdit", "edit_setting"]


class UnsafeEdit(VcrTransportError):
    """``edit_setting`` can't change a pyproject.toml without touching more than the one setting."""


def edit_setting(text: str, key: str, value: Any, *, where: str = "pyproject.toml") -> str:
    """A pyproject.toml's text with ``key`` of ``[tool.vcr_transport]`` set to ``value`` (None: removed), edited
    with a round-trip TOML library (tomlkit): comments, order and layout stay as they were. The result is read
    back: when anything but that one key changed, or the file does not parse, it is refused (UnsafeEdit)."""
    import tomllib

    import tomlkit  # lazily: only ``vcr-transport config`` edits files
    from tomlkit.exceptions import TOMLKitError

    if key not in PYPROJECT_NAMES:
        check_settings({key: value}, Path(where))
    try:
        before = tomllib.loads(text)
        document = tomlkit.parse(text)
        tool = document.setdefault("tool", tomlkit.table(is_super_table=True))
        table = tool.get("vcr_transport")
        if table is None:
            if value is None:
                return text
            tool["vcr_transport"] = table = tomlkit.table()
        if value is None:
            _unset(document, tool, key)
        else:
            table[key] = value
        edited = tomlkit.dumps(document)
        if value is None:
            edited = _no_new_blank_end(text, edited)
        after = tomllib.loads(edited)
    except (tomllib.TOMLDecodeError, TOMLKitError, TypeError, ValueError, AttributeError) as error:
        raise UnsafeEdit(f"{where}: can't edit [tool.vcr_transport] safely ({error}); edit it by hand") from None
    expected = _with_setting(before, key, value)
    if value is None:
        expected = _less_emptied_tables(expected, after)
    if after != expected:
        raise UnsafeEdit(
            f"{where}: can't edit [tool.vcr_transport] safely (the edit would change more than {key}); edit it by hand"
        )
    return edited


def _unset(document: Any, tool: Any, key: str) -> None:
    """``key`` out of ``[tool.vcr_transport]``; the table goes once it holds no key and no comment (a comment is
    the user's, and stays with its table), and ``tool`` with it when nothing but that dotted header made it."""
    from tomlkit.items import Comment

    table = tool["vcr_transport"]
    table.pop(key, None)
    if len(table) or any(isinstance(item, Comment) for _, item in table.value.body):
        return
    del tool["vcr_transport"]
    if not len(tool) and tool.is_super_table():
        del document["tool"]


def _no_new_blank_end(text: str, edited: str) -> str:
    """``edited`` without the blank line it ends in when ``text`` did not: the one ``set`` put before the table
    an unset took away, so that set then unset gives the file back byte for byte."""
    if edited.endswith("\n\n") and not text.endswith("\n\n"):
        return edited.rstrip("\n") + "\n"
    return edited


def _with_setting(document: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """What a parsed pyproject.toml should read as once ``key`` is set (None: removed)."""
    tool = dict(document.get("tool", {}))
    settings = dict(tool.get("vcr_transport", {}))
    if value is None:
        settings.pop(key, None)
    else:
        settings[key] = value
    if settings or "vcr_transport" in tool:
        tool["vcr_transport"] = settings
    result = dict(document)
    if tool or "tool" in document:
        result["tool"] = tool
    return result


def _less_emptied_tables(expected: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``expected`` without the empty ``[tool.vcr_transport]`` (and then empty ``tool``) that ``after`` no longer
    has: an unset may take away the tables it left empty (``_drop_if_empty``), and nothing else."""
    tool = expected.get("tool")
    if tool is not None and tool.get("vcr_transport") == {} and "vcr_transport" not in after.get("tool", {}):
        tool = {name: table for name, table in tool.items() if name != "vcr_transport"}
        expected = {**expected, "tool": tool}
    if tool == {} and "tool" not in after:
        expected = {name: table for name, table in expected.items() if name != "tool"}
    return expected
