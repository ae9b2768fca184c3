"""``_registration.py``: what the pytest plugin registers when it loads, generated from ``Options`` and the modes."""

from __future__ import annotations

from pathlib import Path

from doc_blocks import docs_gen


def test_the_registration_module_is_what_the_options_give() -> None:
    from vcr_transport import _registration
    from vcr_transport._compat import FLAGS, OWNERS, RECORD_MODES
    from vcr_transport._core.engine._modes import ENVIRONMENT_VARIABLE, MODES
    from vcr_transport._core.engine._options import COMPAT_INI, Options, pyproject_names

    assert Path(_registration.__file__).read_text(encoding="utf-8") == docs_gen().registration_module(), (
        "vcr_transport/_registration.py differs from Options: run .venv/bin/python docs/_gen.py"
    )
    assert _registration.MODES == MODES and _registration.ENVIRONMENT_VARIABLE == ENVIRONMENT_VARIABLE
    assert _registration.COMPAT_INI == COMPAT_INI
    assert _registration.PYPROJECT_NAMES == pyproject_names()
    ini = {name: setting for name, setting, *_ in _registration.INI_OPTIONS}
    assert ini == {name: Options.knob(name).ini for name in Options.names("marker") if Options.knob(name).ini}
    kinds = {name: (kind, choices) for name, _, _, kind, choices in _registration.INI_OPTIONS}
    assert kinds == {
        name: ("args" if isinstance(getattr(Options(), name), tuple) else "string", Options.knob(name).choices)
        for name in ini
    }
    assert kinds["allowed_hosts"] == ("args", ()) and kinds["block_network"] == ("string", ("true", "false", "session"))
    assert {"max_age": "vcr_transport_max_age", "on_expiry": "vcr_transport_on_expiry"}.items() <= ini.items()
    # What the compatibility mode registers, for the thin plugin to register without importing ``_compat``.
    assert _registration.COMPAT_FLAGS == FLAGS and _registration.COMPAT_OWNERS == OWNERS
    assert dict((dest, choices) for _, dest, _, choices, _ in FLAGS)["record_mode"] == tuple(sorted(RECORD_MODES))


def test_an_ini_setting_is_read_as_its_option_takes_it() -> None:
    import pytest

    from vcr_transport._core.engine._options import Options

    assert Options.knob("max_age").from_text("30", "the ini vcr_transport_max_age") == 30.0
    assert Options.knob("on_expiry").from_text("fail", "the ini vcr_transport_on_expiry") == "fail"
    with pytest.raises(
        ValueError, match=r"^the ini vcr_transport_max_age must be a finite number of days > 0, not '0'$"
    ):
        Options.knob("max_age").from_text("0", "the ini vcr_transport_max_age")
    with pytest.raises(TypeError, match=r"^max_age=: option max_age must be a number of days or None, not '3'$"):
        Options(max_age="3", where="max_age=")  # type: ignore[arg-type]
