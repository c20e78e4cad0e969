# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# The SwanLab key compared by value, not by name: after templating, no setting other than
# verl_swanlab_api_key may hold the key (as it is, base64-encoded or URL-encoded: a setting such as
# verl_experiment_name: "{{ verl_swanlab_api_key }}" or a URL's userinfo would write it into the scripts and
# the job's output), and no message may show a value that holds it. Callers hold the key on the controller
# and pass it here; nothing here returns it.
from __future__ import annotations

import base64
import urllib.parse

# A key shorter than this is not looked for in other values (every value would seem to hold it); such a
# key is refused by SwanLab itself.
MIN_LENGTH = 4
HIDDEN = "(not shown: it holds the SwanLab key)"


def key_forms(key):
    """The spellings of `key` that carry it: as it is, base64 (standard and URL-safe, with and without padding)
    and URL-encoded (quote and quote_plus). Empty when there is no usable key."""
    text = "" if key is None else str(key)
    if len(text) < MIN_LENGTH:
        return ()
    raw = text.encode("utf-8", "surrogatepass")
    forms = {text, urllib.parse.quote(text, safe=""), urllib.parse.quote_plus(text)}
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        forms.add(encoded.decode("ascii"))
        forms.add(encoded.decode("ascii").rstrip("="))
    # Longest first, so that redact() replaces a whole form before a part of it.
    return tuple(sorted(forms, key=len, reverse=True))


def holds_key(value, forms, depth=0):
    """Whether a value (strings, dict keys and values, lists; nested) holds one of the key's forms."""
    if not forms or depth > 16:
        return False
    if isinstance(value, dict):
        return any(holds_key(k, forms, depth + 1) or holds_key(v, forms, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return any(holds_key(item, forms, depth + 1) for item in value)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = str(value)
        return any(form in text for form in forms)
    return False


def key_problems(settings, forms, secret_name="verl_swanlab_api_key"):
    """An error ({variable, value, msg}) for each setting whose value holds the key; the value is never shown."""
    problems = []
    for name in sorted(settings, key=str):
        if name == secret_name or not holds_key(settings[name], forms):
            continue
        problems.append({"variable": name, "value": HIDDEN, "msg": (
            "%s holds the SwanLab key (the value of %s, or its base64 or URL-encoded form), so its value is not shown: it "
            "would be written into the launch scripts, the deploy's output and the job's artifacts. Fix: give the key only as "
            "%s (from a vault or an AWX credential) and remove it from %s." % (name, secret_name, secret_name, name))})
    return problems


def redact(value, forms, depth=0):
    """`value` with every form of the key replaced by ********, in strings, lists and dicts."""
    if not forms or depth > 32:
        return value
    if isinstance(value, str):
        for form in forms:
            value = value.replace(form, "********")
        return value
    if isinstance(value, (list, tuple)):
        return [redact(item, forms, depth + 1) for item in value]
    if isinstance(value, dict):
        return {redact(k, forms, depth + 1): redact(v, forms, depth + 1) for k, v in value.items()}
    return value
