# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# Checks of single values that reach a script, a path or a command line: text (length, control
# characters), numbers (whole, finite, bounded), paths (judged on their canonical form), names, host
# names, image references. Each returns the normalised value, or None after adding one error that
# names the variable, a shortened value and the fix. Nothing here knows about particular settings.
from __future__ import annotations

import ipaddress
import math
import posixpath
import re
import unicodedata

# Control characters: C0 (newline, tab, escape ...), DEL, C1, the Unicode line separators and the format
# characters that reorder or hide text (bidi overrides and isolates, zero-width characters, the BOM).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
# Longest value shown in a message; longer ones are cut and say how long they were.
SHOW_LIMIT = 60
# What reaches the module at all (tasks/validate.yml screens with the verl.deploy.screen_settings
# filter): beyond this a value is replaced by a short description before it is serialised.
SCREEN_MAX_NODES = 2000
SCREEN_MAX_DEPTH = 4
SCREEN_MAX_CHARS = 65536
OVERSIZED = "__verl_oversized__"

# Characters a path may hold: Hydra reads override values unquoted, and `$`, quotes, spaces,
# commas or brackets would change their meaning there (and in the shell).
PATH_CHARS = re.compile(r"/[A-Za-z0-9._/@%+:~-]*")
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Inventory host names become a folder name (render.yml) and appear in the scripts' comments and messages.
HOST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,251}[A-Za-z0-9])?")
DNS_NAME = re.compile(r"(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*")
IFNAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")

# Where nothing of a deployment may live, judged on the canonical form of a path (canonical_path): a deny-list
# that covers the FHS. The trees are refused with everything below them (the system's programs, libraries and
# configuration, the kernel's and the init system's views, the package and engine state in /var/lib, root's
# home), the folders only themselves (a folder of its own below them is fine). OWN_TREES are the collection's own
# folders inside a refused tree (the default stage folder, /var/lib/verl-deploy).
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/lost+found", "/proc", "/root", "/run",
                "/sbin", "/snap", "/sys", "/usr", "/var/backups", "/var/cache", "/var/lib", "/var/lock", "/var/mail", "/var/run",
                "/var/spool")
SYSTEM_FOLDERS = ("/", "/home", "/media", "/mnt", "/opt", "/srv", "/tmp", "/var", "/var/local", "/var/log", "/var/opt", "/var/tmp")
OWN_TREES = ("/var/lib/verl-deploy",)
# Inside the training container (verl_workdir, verl_swanlab_api_key_file): the container runs as root, so
# root's home is its own; the system's trees are the image's and are not written into.
CONTAINER_TREES = tuple(tree for tree in SYSTEM_TREES if tree != "/root")
# Where a file bind-mounted from the host may not come from: the kernel's and the init system's views and the
# engines' sockets (/var/run/docker.sock) live there.
SPECIAL_TREES = ("/dev", "/proc", "/run", "/sys", "/var/run")
USES = {"mount": "mounted into the container", "output": "written into", "controller": "written into on the controller",
        "container": "written into in the container"}

# Docker's reference grammar (github.com/distribution/reference, regexp.go).
_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = _ALNUM + r"(?:" + _SEPARATOR + _ALNUM + r")*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = r"(?:" + _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
IMAGE_REFERENCE = re.compile(
    r"(?P<name>(?:" + _DOMAIN + r"/)?" + _PATH_COMPONENT + r"(?:/" + _PATH_COMPONENT + r")*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?",
    re.ASCII,
)
IMAGE_NAME_MAX = 255


# The names of the collection's own variables (what its roles and playbooks compute, set_fact and register
# included): given from the inventory or as an extra var, one would replace what they compute, and extra vars
# beat set_fact (-e _verl_launch=... would replace the validated configuration).
INTERNAL_NAME = re.compile(r"(__|_verl_|_training_|_precheck_|_container_|_ray_|_swanlab_)")


def plain_or_shown(text):
    """A name as it is when it is a short, plain string, else escaped and cut (show)."""
    return text if isinstance(text, str) and len(text) <= SHOW_LIMIT and text.isprintable() else show(text)


def internal_name_problem(name, hosts):
    """The message for an inventory or extra variable named like the collection's internals, or None."""
    if not isinstance(name, str) or not INTERNAL_NAME.match(name):
        return None
    return ("%s (given in the inventory or with -e, seen on %s) is named like the collection's internal variables (_verl_*, "
            "_training_*, _precheck_*, _container_*, _ray_*, _swanlab_*, __*), which the playbooks compute: given, it would replace "
            "what they compute (extra vars beat set_fact). Fix: remove it; the settings are the verl_* variables (docs/settings.md)."
            % (plain_or_shown(name), ", ".join(plain_or_shown(h) for h in hosts[:8])
               + (" and %d more" % (len(hosts) - 8) if len(hosts) > 8 else "")))


class Errors(list):
    """The problems found: each names the variable, a shortened value and the message (with the fix)."""

    def add(self, variable, value, msg):
        self.append({"variable": variable, "value": short(value), "msg": msg})


def short(value, limit=SHOW_LIMIT):
    """A value as it may be echoed in an error: scalars and short one-line strings as they are, others cut by show()."""
    if value is None or isinstance(value, (bool, float)) or (isinstance(value, int) and abs(value) < 10 ** 15):
        return value
    if isinstance(value, str) and len(value) <= limit and value.isprintable():
        return value
    return show(value, limit)


def show(value, limit=SHOW_LIMIT):
    """repr() of a value for a message, cut to `limit` characters with its length, never walking a huge input."""
    reason = oversized(value)
    if reason:
        return "<%s>" % reason
    if isinstance(value, str):
        text = escaped(value)
        if len(text) <= limit:
            return text
        return "%s... (%d characters)" % (text[:limit], len(value))
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10 ** 40:
        return "a whole number of about %d digits" % int(value.bit_length() * 0.30103)
    text = repr(value) if isinstance(value, (list, tuple, dict)) else str(value)
    if len(text) <= limit:
        return text
    return "%s... (%d characters)" % (text[:limit], len(text))


def escaped(text):
    """repr() of a string, with the format characters repr() leaves as they are (or writes as \\uXXXX) shown as
    U+XXXX: control characters read \\n, \\x1b ..., a bidi override U+202E; nothing in it acts on a terminal."""
    out = repr(text)
    out = re.sub(r"\\u([0-9a-f]{4})", lambda m: "U+%s" % m.group(1).upper(), out)
    return "".join("U+%04X" % ord(ch) if unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Co", "Cs") else ch for ch in out)


def oversized(value):
    """Why a value is too large to handle (a short description), or None. Stops after a bounded walk,
    so that a YAML alias bomb (a small document standing for billions of items) is judged at once."""
    if isinstance(value, dict) and set(value) == {OVERSIZED}:
        return str(value[OVERSIZED])[:200]
    budget = [SCREEN_MAX_NODES]

    def walk(item, depth):
        budget[0] -= 1
        if budget[0] < 0:
            return "more than %d items in all" % SCREEN_MAX_NODES
        if isinstance(item, str):
            return "a string of %d characters (at most %d)" % (len(item), SCREEN_MAX_CHARS) if len(item) > SCREEN_MAX_CHARS else None
        if isinstance(item, (list, tuple, dict)):
            if depth >= SCREEN_MAX_DEPTH:
                return "nested more than %d levels deep" % SCREEN_MAX_DEPTH
            children = list(item.items()) if isinstance(item, dict) else item
            for child in children:
                found = walk(child, depth + 1)
                if found:
                    return found
        return None

    return walk(value, 0)


def screen(settings):
    """The settings with each too large value replaced by {OVERSIZED: why} (what the module receives)."""
    return {name: ({OVERSIZED: oversized(value)} if oversized(value) else value) for name, value in (settings or {}).items()}


def to_text(name, value, errors, max_length, what=None):
    """A string (None -> ""; numbers are written out) without control characters, at most max_length long."""
    label = what or name
    if isinstance(value, (dict, list, tuple)):
        errors.add(name, value, "%s=%s is not a string. Fix: give a single value." % (label, show(value)))
        return None
    text = "" if value is None else str(value)
    if len(text) > max_length:
        errors.add(name, value, "%s=%s is longer than %d characters. Fix: give a shorter value." % (label, show(text), max_length))
        return None
    if CONTROL.search(text):
        bad = sorted(set(CONTROL.findall(text)))
        errors.add(name, value, "%s=%s holds the control character(s) %s (a new line would start a new command in a script). "
                   "Fix: give it on one line, without control characters." % (label, show(text), " ".join(repr(c) for c in bad)))
        return None
    return text


def to_int(name, value, errors, minimum=1, maximum=None):
    number = None
    if isinstance(value, bool):
        number = None
    elif isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and len(value) <= 40 and re.fullmatch(r"\s*-?\d+\s*", value):
        number = int(value)
    bound = "from %d to %d" % (minimum, maximum) if maximum is not None else "of at least %d" % minimum
    if number is None:
        errors.add(name, value, "%s=%s is not a whole number. Fix: give a whole number %s, e.g. %s=%s." % (
            name, show(value), bound, name, max(minimum, min(4, maximum if maximum is not None else 4))))
        return None
    if number < minimum or (maximum is not None and number > maximum):
        errors.add(name, value, "%s=%s is out of range. Fix: give a whole number %s." % (name, show(number), bound))
        return None
    return number


def to_float(name, value, errors, above=0.0, maximum=None):
    number = None
    if not isinstance(value, bool) and not (isinstance(value, str) and len(value) > 40):
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            number = None
    bound = "greater than %g" % above + (" and at most %g" % maximum if maximum is not None else "")
    if number is None or not math.isfinite(number):
        errors.add(name, value, "%s=%s is not a finite number. Fix: give a number %s, e.g. %s=1e-6." % (name, show(value), bound, name))
        return None
    if number <= above or (maximum is not None and number > maximum):
        errors.add(name, value, "%s=%s is out of range. Fix: give a number %s." % (name, show(value), bound))
        return None
    return number


def format_float(number):
    """1e-06 -> 1e-6, 0.8 -> 0.8: the short form a person would write."""
    text = "%.12g" % number
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), text)


_TRUE = ("true", "yes", "on", "1", "y", "t")
_FALSE = ("false", "no", "off", "0", "n", "f", "")


def to_bool(name, value, errors):
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    errors.add(name, value, "%s=%s is not a boolean. Fix: give true or false." % (name, show(value)))
    return None


def canonical_path(text):
    """The one canonical form of an absolute path, as the kernel resolves it without links: surrounding spaces
    dropped, runs of `/` (a leading `//` too, which posixpath.normpath keeps) made one, `.` dropped and `..`
    taken back (never above /), no trailing `/`. Every path setting and mount is judged on this form."""
    text = re.sub(r"/+", "/", text.strip())
    if not text.startswith("/"):
        return text
    return posixpath.normpath(text) if text != "/" else "/"


def _in_tree(path, trees):
    return any(path == tree or path.startswith(tree + "/") for tree in trees)


def system_problem(canonical, use):
    """Why a canonical path must not be used as `use` (mount, output, container), or None."""
    if use == "container":
        denied = canonical == "/" or _in_tree(canonical, CONTAINER_TREES)
    else:
        denied = canonical in SYSTEM_FOLDERS or (_in_tree(canonical, SYSTEM_TREES) and not _in_tree(canonical, OWN_TREES))
    if denied:
        return ("is the root or a system folder (%s), which must not be %s. Fix: give a folder of its own (not in /usr, /etc, "
                "/var/lib, /proc, /sys, /dev, /boot, /run, /root ...)" % (canonical, USES.get(use, "used")))
    return None


def path_problem(text, use=None):
    """Why `text` is not a usable absolute path (for `use` mount/output/container also: not / nor a system folder,
    judged on its canonical form), or None."""
    if not text.startswith("/"):
        return ("is a relative path; the scripts run inside the container from verl_workdir, so it would be read from "
                "the wrong place. Fix: give the absolute path")
    if not PATH_CHARS.fullmatch(text):
        bad = sorted(set(ch for ch in text if not re.match(r"[A-Za-z0-9._/@%+:~-]", ch)))
        return ("contains %s, which the Hydra command line cannot take unquoted. Fix: use a path made of letters, digits and "
                ". _ - / @ %% + : ~ (rename it or link it, e.g. ln -s)" % " ".join(show(c) for c in bad))
    canonical = canonical_path(text)
    problem = system_problem(canonical, use) if use else None
    if problem:
        return problem
    if canonical != (text.rstrip("/") or "/"):
        return "is not in canonical form (no '..', '.' or '//' parts). Fix: give it as %s" % canonical
    if use == "mount" and ":" in text:
        return ("holds ':', which splits a Docker volume spec (host:container:mode). Fix: rename the folder or link it without "
                "':' (e.g. ln -s)")
    return None


def to_path(name, value, errors, required=False, use=None, empty=False, example="/mnt/project/verl", what=None):
    """A normalised absolute path (no trailing /), or "" when empty is allowed, or None after an error."""
    label = what or name
    text = to_text(name, value, errors, 1024, what=label)
    if text is None:
        return None
    text = text.strip()
    if not text:
        if empty:
            return ""
        if required:
            errors.add(name, value, "%s is empty. Fix: give the absolute path on the hosts, e.g. -e %s=%s." % (label, name, example))
        else:
            errors.add(name, value, "%s is empty. Fix: give an absolute path or leave it at its default." % label)
        return None
    problem = path_problem(text, use)
    if problem:
        errors.add(name, value, "%s=%s %s, e.g. %s=%s." % (label, show(text), problem, name, example))
        return None
    return text.rstrip("/") or "/"


def to_name(name, value, errors, max_length=128, empty=False):
    text = to_text(name, value, errors, max_length)
    if text is None:
        return None
    text = text.strip()
    if not text and empty:
        return ""
    if not SAFE_NAME.fullmatch(text):
        errors.add(name, value, "%s=%s is not a usable name. Fix: use letters, digits, '.', '_' and '-', starting with a letter or digit."
                   % (name, show(value)))
        return None
    return text


def host_name_problem(name):
    """Why an inventory host name cannot be used (it becomes a folder and appears in the scripts), or None."""
    text = name if isinstance(name, str) else str(name)
    if HOST_NAME.fullmatch(text) and ".." not in text:
        return None
    return ("is not usable: it becomes a folder name under verl_output_dir and appears in the scripts. Fix: name the host "
            "with letters, digits, '.', '_' and '-' (starting and ending with a letter or digit, no '..', at most 253 "
            "characters) and give its address as ansible_host")


def is_ipv4(text):
    """An IPv4 address in dotted decimal: four numbers from 0 to 255, no leading zeros (ipaddress's strict form)."""
    try:
        ipaddress.IPv4Address(text)
        return True
    except ValueError:
        return False


# inet_aton's parts (glibc, the BSDs): decimal, octal after a leading 0, hex after 0x. getaddrinfo (so ssh, ping, Ray,
# getent ahostsv4 in start_verl.sh) reads a string made of one to four of them, separated by dots, as an address
# before any name lookup; the last part fills the bytes that are left: 010.0.0.5 is 8.0.0.5, 167772165, 0xa.0.0.5 and
# 10.5 are 10.0.0.5.
_INET_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")
_INET_PARTS = ((re.compile(r"0[xX][0-9a-fA-F]+"), 16, 2), (re.compile(r"0[0-7]*"), 8, 0), (re.compile(r"[1-9][0-9]*"), 10, 0))


def inet_aton(text):
    """The IPv4 address (dotted decimal) glibc's inet_aton reads from `text`, or None when it reads none."""
    parts = text.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values = []
    for part in parts:
        found = next(((base, skip) for pattern, base, skip in _INET_PARTS if pattern.fullmatch(part)), None)
        if found is None or len(part) > 40:
            return None
        values.append(int(part[found[1]:], found[0]))
    *leading, last = values
    if any(value > 255 for value in leading) or last >= 256 ** (4 - len(leading)):
        return None
    number = 0
    for value in leading:
        number = number * 256 + value
    return str(ipaddress.IPv4Address(number * 256 ** (4 - len(leading)) + last))


def legacy_address(text):
    """(why, fix) for text written like an IPv4 address but not in dotted decimal, else None: `why` says what the
    resolver makes of it (the address it would connect to), `fix` is the dotted-decimal address to write (None when
    none can be guessed). Host names are left alone: a name with a label that is not a number (3com.example,
    node-1.10, 0x) is never read as an address."""
    if is_ipv4(text):
        return None
    parts = text.split(".")
    if not all(_INET_NUMBER.fullmatch(part) for part in parts):
        return None
    reading = inet_aton(text)
    decimal = ".".join(str(int(part)) for part in parts) if len(parts) == 4 and all(part.isdigit() for part in parts) else None
    decimal = decimal if decimal and is_ipv4(decimal) else None
    if reading is None:
        if not all(part.isdigit() for part in parts):
            return None  # hex-looking labels that inet_aton reads no address from are looked up as a name
        return ("is made of numbers like an IPv4 address but is none (inet_aton reads no address from it, and a host name's "
                "last label is never all digits, RFC 1123), so the resolver would look it up as a name and fail", decimal)
    if decimal and decimal != reading:
        return ("is read as an address by inet_aton, the resolver's first step (getaddrinfo, getent, ssh): a part with a "
                "leading 0 is octal, so it connects to %s, not %s" % (reading, decimal), decimal)
    return ("is a legacy form of an IPv4 address (a bare number, hex or octal parts, fewer than four parts) that inet_aton, "
            "the resolver's first step (getaddrinfo, getent, ssh), reads as %s" % reading, reading)


# Ray's temporary folder unless `ray start --temp-dir` names another: its sessions (session_latest), their logs, and the
# objects it spills.
RAY_TEMP_DIR = "/tmp/ray"


def ray_start_option(args, option):
    """The value of `--option=value` in verl_ray_start_args (every `ray start` gets them; the last one counts), else None."""
    values = [str(arg).split("=", 1)[1] for arg in args or [] if str(arg).startswith(option + "=")]
    return values[-1] if values else None


def ray_temp_dir(args):
    """Ray's temporary folder in the training container: `--temp-dir` of verl_ray_start_args, else /tmp/ray."""
    return (ray_start_option(args, "--temp-dir") or RAY_TEMP_DIR).rstrip("/") or "/"


def image_problem(text):
    """Why an image reference does not follow Docker's reference grammar, or None."""
    match = IMAGE_REFERENCE.fullmatch(text)
    if not match:
        return "is not a Docker image reference ([registry[:port]/]name[:tag][@digest], name in lower case)"
    if len(match.group("name")) > IMAGE_NAME_MAX:
        return "has a name longer than %d characters" % IMAGE_NAME_MAX
    return None
