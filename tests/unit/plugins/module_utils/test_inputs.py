# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Checks of single values: text, numbers, paths, names, host names, image references, environment names, screening."""
from __future__ import annotations

import time

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _inputs as inputs


def check(function, value, *args, **kwargs):
    errors = inputs.Errors()
    result = function("verl_x", value, errors, *args, **kwargs)
    return result, errors


def test_show_cuts_long_values_and_says_how_long_they_were():
    assert inputs.show("abc") == "'abc'"
    text = inputs.show("x" * 1000)
    assert len(text) < 100 and "(1000 characters)" in text
    assert "digits" in inputs.show(10 ** 5000)


def test_short_keeps_plain_values_and_cuts_the_rest():
    assert inputs.short(4) == 4 and inputs.short("abc") == "abc" and inputs.short(None) is None
    assert inputs.short("a\nb") == "'a\\nb'"
    assert len(inputs.short(["x"] * 1000)) < 100


def test_oversized_is_judged_without_expanding_an_alias_bomb():
    bomb = ["x"] * 9
    for _level in range(12):
        bomb = [bomb] * 9
    started = time.monotonic()
    assert inputs.oversized(bomb)
    assert time.monotonic() - started < 0.5
    assert inputs.oversized("x" * (inputs.SCREEN_MAX_CHARS + 1))
    assert inputs.oversized(["a=b"] * 100) is None and inputs.oversized({"A": "1"}) is None


def test_screen_replaces_only_what_is_too_large():
    screened = inputs.screen({"a": "x" * 100000, "b": [1, 2], "c": "ok"})
    assert set(screened["a"]) == {inputs.OVERSIZED} and screened["b"] == [1, 2] and screened["c"] == "ok"
    assert inputs.oversized(screened["a"]).startswith("a string of 100000")


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\x00", "a\x1b[31m", "a\x85", "a\u2028b", "a\tb"])
def test_text_refuses_control_characters(value):
    result, errors = check(inputs.to_text, value, 100)
    assert result is None and "control character" in errors[0]["msg"]


def test_text_refuses_too_long_values_and_containers():
    assert check(inputs.to_text, "x" * 101, 100)[0] is None
    assert check(inputs.to_text, ["x"], 100)[0] is None
    assert check(inputs.to_text, 12, 100)[0] == "12" and check(inputs.to_text, None, 100)[0] == ""


@pytest.mark.parametrize(("value", "expected"), [(4, 4), ("4", 4), (" 7 ", 7), (4.0, 4), ("-1", None), (10 ** 30, None),
                                                 (True, None), ("1e3", None), (float("inf"), None), ("9" * 50, None)])
def test_int_is_whole_and_bounded(value, expected):
    assert check(inputs.to_int, value, 0, 1000)[0] == expected


@pytest.mark.parametrize(("value", "expected"), [(0.5, 0.5), ("1e-6", 1e-6), (1, 1.0), (float("inf"), None), ("nan", None),
                                                 ("1e400", None), (0, None), (1.5, None), (True, None)])
def test_float_is_finite_and_bounded(value, expected):
    assert check(inputs.to_float, value, 0.0, 1.0)[0] == expected


def test_format_float_writes_what_a_person_would():
    assert inputs.format_float(1e-6) == "1e-6" and inputs.format_float(0.8) == "0.8"


def test_bool_reads_survey_answers():
    assert check(inputs.to_bool, "yes")[0] is True and check(inputs.to_bool, "off")[0] is False
    assert check(inputs.to_bool, "maybe")[0] is None


@pytest.mark.parametrize(("path", "use", "fine"), [
    ("/data/x", None, True), ("/data/x/", None, True), ("/", None, True), ("/", "mount", False), ("/etc", "output", False),
    ("/etc/x", "mount", False), ("/proc/1", "mount", False), ("/usr", "mount", False), ("/usr/local/x", "mount", False),
    ("//etc", "mount", False), ("/./etc", "output", False), ("/x/../etc", "mount", False), ("/var/lib/docker", "mount", False),
    ("/var/lib/verl-deploy", "output", True), ("/root/x", "output", False), ("/root/.swanlab/k", "container", True),
    ("/usr/bin/x", "container", False), ("/data/a:b", "mount", False), ("/data/a:b", None, True), ("/proc/self/cwd", "output", False),
    ("/tmp/x", "output", True), ("/tmp", "output", False), ("/a/../b", None, False), ("/a//b", None, False), ("/a/./b", None, False),
    ("rel", None, False), ("/a b", None, False), ("/a$b", None, False),
])
def test_path_problem(path, use, fine):
    assert (inputs.path_problem(path, use) is None) == fine


@pytest.mark.parametrize(("path", "canonical"), [
    ("//etc", "/etc"), ("/a/./b", "/a/b"), ("/a/../../etc", "/etc"), ("/a//b/", "/a/b"), ("/x ", "/x"), ("///", "/"), ("/", "/"),
    ("//proc/self/cwd", "/proc/self/cwd"), ("/a/b/..", "/a"),
])
def test_canonical_path_resolves_what_the_kernel_would(path, canonical):
    assert inputs.canonical_path(path) == canonical


def test_a_path_is_judged_on_its_canonical_form_and_the_message_names_it():
    problem = inputs.path_problem("//usr/bin", "output")
    assert "/usr/bin" in problem and "system folder" in problem
    assert "give it as /a/b" in inputs.path_problem("/a//b", None)


def test_to_path_normalises_and_allows_empty_only_when_told():
    assert check(inputs.to_path, "/data/x/")[0] == "/data/x"
    assert check(inputs.to_path, "", empty=True)[0] == ""
    result, errors = check(inputs.to_path, "", required=True, example="/m")
    assert result is None and "-e verl_x=/m" in errors[0]["msg"]


@pytest.mark.parametrize(("name", "fine"), [("node-01", True), ("10.0.0.1", True), ("n_1", True), ("localhost", True), ("..", False),
                                            ("a/b", False), ("n\n1", False), ("n$(id)", False), ("", False), ("-x", False),
                                            ("a..b", False), ("x" * 254, False)])
def test_host_name_problem(name, fine):
    assert (inputs.host_name_problem(name) is None) == fine


@pytest.mark.parametrize(("ref", "fine"), [
    ("quay.io/ascend/verl:verl-8.3.rc1-910b-ubuntu22.04-py3.11-v0.7.0", True), ("registry:5000/verl/verl-sim:abc", True),
    ("ubuntu", True), ("localhost/x@sha256:" + "a" * 64, True), ("x/UPPER", False), ("x:", False), ("x y", False), ("-x", False),
    ("x:$(id)", False), ("http://x/y", False), ("a" * 300, False),
])
def test_image_problem_follows_dockers_grammar(ref, fine):
    assert (inputs.image_problem(ref) is None) == fine


def test_errors_keep_values_short():
    errors = inputs.Errors()
    errors.add("verl_x", "y" * 10000, "msg")
    assert len(errors[0]["value"]) < 100


# inet_aton's legacy forms (glibc): what the resolver connects to before any name lookup. `reading` is what
# inet_aton reads (None: no address), `fix` the dotted-decimal address the refusal offers (None: not refused).
@pytest.mark.parametrize(("text", "reading", "fix"), [
    ("010.0.0.5", "8.0.0.5", "10.0.0.5"), ("167772165", "10.0.0.5", "10.0.0.5"), ("0xa.0.0.5", "10.0.0.5", "10.0.0.5"),
    ("0x0a000005", "10.0.0.5", "10.0.0.5"), ("0XA.0.0.5", "10.0.0.5", "10.0.0.5"), ("10.5", "10.0.0.5", "10.0.0.5"),
    ("10.0.5", "10.0.0.5", "10.0.0.5"), ("10.0.0.05", "10.0.0.5", "10.0.0.5"), ("0", "0.0.0.0", "0.0.0.0"),
    ("192.168.010.1", "192.168.8.1", "192.168.10.1"), ("4294967295", "255.255.255.255", "255.255.255.255"),
])
def test_a_legacy_address_is_refused_with_what_it_connects_to(text, reading, fix):
    import socket

    assert inputs.inet_aton(text) == reading == socket.inet_ntoa(socket.inet_aton(text))  # this machine's glibc agrees
    why, offered = inputs.legacy_address(text)
    assert reading in why and offered == fix
    assert inputs.legacy_address(offered) is None and inputs.is_ipv4(offered)  # the fix, applied, passes


@pytest.mark.parametrize(("text", "fix"), [("10.0.0.08", "10.0.0.8"), ("999.1.1.1", None), ("1.2.3.4.5", None),
                                           ("4294967296", None), ("256.1", None)])
def test_digits_and_dots_that_are_no_address_are_refused_as_no_name_either(text, fix):
    import socket

    with pytest.raises(OSError):
        socket.inet_aton(text)
    assert inputs.inet_aton(text) is None
    why, offered = inputs.legacy_address(text)
    assert "RFC 1123" in why and offered == fix


@pytest.mark.parametrize("text", ["10.0.0.5", "0.0.0.0", "255.255.255.255", "3com.example", "node-1.10", "head.example", "0x",
                                  "0xdead.0xbeef", "a0.0.0.5", "10.0.0.5a", "localhost", "::1", "fe80::1", "2001:db8::5"])
def test_dotted_decimal_names_and_ipv6_are_not_legacy_addresses(text):
    assert inputs.legacy_address(text) is None
