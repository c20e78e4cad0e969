"""The settings table -> roles/verl/defaults/main.yml and docs/settings.md; the algorithm table -> docs/algorithms.md;
the release table (plugins/module_utils/_versions.py) -> docs/versions.md; the failure table
(plugins/module_utils/_failures.py) -> the failure section of docs/troubleshooting.md (between its markers).

The settings table is the verl role's meta/argument_specs.yml (type, default, choices, description) with
meta/setting_rules.yml beside it (rule, bounds, section); the algorithm table is
plugins/module_utils/_algorithms.py. The generated files are written from them:

    .venv/bin/python tools/settings_table.py --write

tests/test_settings_contract.py, tests/unit/plugins/module_utils/test_algorithms.py, test_versions.py and test_failures.py fail
when a file is not what this writes.
"""
from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
META = REPO / "roles" / "verl" / "meta"
DEFAULTS_FILE = REPO / "roles" / "verl" / "defaults" / "main.yml"
DOCS_FILE = REPO / "docs" / "settings.md"
ALGORITHMS_FILE = REPO / "docs" / "algorithms.md"
VERSIONS_FILE = REPO / "docs" / "versions.md"
TROUBLESHOOTING_FILE = REPO / "docs" / "troubleshooting.md"
# Its Chinese page holds the same table (the error texts are what a terminal shows; the rows are kept in one place).
TROUBLESHOOTING_ZH_FILE = REPO / "docs" / "zh" / "troubleshooting.md"
FAILURES_BEGIN = "<!-- Generated from the failure table (plugins/module_utils/_failures.py) by tools/settings_table.py; do not edit. -->"
FAILURES_END = "<!-- End of the generated failure table. -->"
GENERATED = "Generated from the settings table (roles/verl/meta/argument_specs.yml and setting_rules.yml) by tools/settings_table.py"


def _module_util(name):
    """plugins/module_utils/<name>.py, loaded alone (it uses only the standard library)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("verl_" + name.strip("_"), REPO / "plugins" / "module_utils" / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def environment():
    return _module_util("_environment")


def algorithms_text():
    """docs/algorithms.md: every entry of the algorithm table, what it runs, adds and leaves out."""
    table = _module_util("_algorithms")
    lines = ["# Algorithms", "",
             "<!-- Generated from the algorithm table (plugins/module_utils/_algorithms.py) by tools/settings_table.py; do not edit. -->",
             "", "`verl_algorithm` picks one entry of the algorithm table. Every entry runs on the Megatron backend with vLLM",
             "rollout, the same feature mask ([features.md](features.md)) and the same hyper-parameters; what differs is below.", "",
             "| `verl_algorithm` | label | entry point | Hydra config | what it is |", "|---|---|---|---|---|"]
    for entry in table.ALGORITHMS:
        default = " (default)" if entry["key"] == table.DEFAULT else ""
        lines.append("| `%s`%s | %s | `python3 -m %s` | `%s` | %s: %s |" % (
            entry["key"], default, entry["label"], entry["module"], entry["config"], entry["summary"], entry["description"]))
    for entry in table.ALGORITHMS:
        lines += ["", "## %s (`%s`)" % (entry["label"], entry["key"]), "",
                  "From verl v0.7.0: %s." % ", ".join("`%s`" % part.strip() for part in entry["source"].split(", ")), ""]
        if entry["note"]:
            lines += [entry["note"], ""]
        lines += ["Lines `run_training.sh` adds:", ""]
        lines += ["- `%s`" % line for line in entry["overrides"]]
        if entry["left_out"]:
            lines += ["", "Left out:", ""]
            lines += ["- `%s`: %s" % (key, why) for key, why in entry["left_out"].items()]
        rules = [table.RULES[rule] for rule in entry["rules"]]
        lines += ["", "Rules that apply to it (of those that depend on the algorithm): %s" % (" ".join(rules) if rules else "none.")]
    lines += ["", "## Adding an algorithm", "",
              "1. One `_algorithm(...)` entry in `plugins/module_utils/_algorithms.py`: its entry point and Hydra config in verl",
              "   v0.7.0, label, summary, its override lines (`${VAR}` may name run_training.sh's variables), what it leaves out",
              "   and why, and which of the table's `RULES` apply.",
              "2. Add its key to the choices of `verl_algorithm` (`roles/verl/meta/argument_specs.yml`) and of the AWX survey",
              "   (`awx/surveys.yml`): `tests/unit/plugins/module_utils/test_algorithms.py` fails until both equal the table.",
              "3. Run `.venv/bin/python tools/settings_table.py --write` (rewrites this page and the settings' defaults).",
              "4. Tests: its lines in `tests/test_masks.py` (from verl's own example, not from the table), its case in",
              "   `tests/test_hydra_schema.py` and `tests/test_verl_oracle.py` (verl's real config schema and checks).", ""]
    return "\n".join(lines)


def _cell(text):
    return str(text).replace("|", "\\|")


def failures_text():
    """The failure section of docs/troubleshooting.md: every row of the failure table, in the order it is tried."""
    table = _module_util("_failures")
    lines = [FAILURES_BEGIN, "",
             "Each row: the error text as its public report shows it (`...` marks what is left out), what it is, whether a",
             "restart from the last checkpoint can get past it (**transient**) or repeats it (**deterministic**), the cause,",
             "the fix, and the report. A **follower** only follows another error (Ray's driver on a dead worker, a retry, an",
             "orphaned compiler): the first failure is the first line of every node, on the controller's clock, that is not",
             "one. Rows are tried in this order; the first whose text a line holds names it. Keep-alive (docs/operations.md,",
             "\"Keeping a long run alive\") starts a training whose first failure is transient again by itself; a node's own",
             "fault (**transient, the node's**) twice on one node in its window names that node instead.", "",
             "| error text | what | kind | cause | fix | report |", "|---|---|---|---|---|---|"]
    for row in table.SIGNATURES:
        kind = "follower" if row["follower"] else ("transient" + (", the node's" if row["node_fault"] else "") if row["transient"]
                                                   else "deterministic")
        lines.append("| `` %s `` | %s | %s | %s | %s | %s |" % tuple(
            _cell(value) for value in (row["seen"], row["class"], kind, row["cause"], row["fix"], row["source"])))
    return "\n".join(lines + ["", FAILURES_END])


def troubleshooting_text(path=TROUBLESHOOTING_FILE):
    """docs/troubleshooting.md (or its Chinese page) with its failure section written from the table (the rest is as it is)."""
    text = path.read_text()
    start, end = text.index(FAILURES_BEGIN), text.index(FAILURES_END) + len(FAILURES_END)
    return text[:start] + failures_text() + text[end:]


def _versions():
    """plugins/module_utils/_versions.py (it imports the algorithm table through the collection's package)."""
    return _packaged("_versions")


def _packaged(name):
    """plugins/module_utils/<name>.py through the collection's package (for a module that imports others of it)."""
    import importlib

    try:
        return importlib.import_module("ansible_collections.verl.deploy.plugins.module_utils." + name)
    except ImportError:  # run alone: the checkout's .collections link (tests/conftest.py makes it)
        sys.path.insert(0, str(REPO / ".collections"))
        return importlib.import_module("ansible_collections.verl.deploy.plugins.module_utils." + name)


def versions_text():
    """docs/versions.md: the profiles, how each is recognised, its images and stack, and every line that differs."""
    versions, features, table = _versions(), _module_util("_features"), _module_util("_algorithms")
    profiles = versions.PROFILES
    lines = ["# verl versions", "",
             "<!-- Generated from the release table (plugins/module_utils/_versions.py) by tools/settings_table.py; do not edit. -->",
             "", "`verl_version` names the verl release `run_training.sh` is rendered for (its entry points and the Hydra keys",
             "that differ between releases). Empty (the default), it is the release of the image the deploy uses when the image",
             "is one of the table's or its tag names a release (`...-v0.7.1`, `v0.8.0-cann...`; `latest-...` is 0.9.1), else",
             "%s, the release of the default images. The confirmation summary says which and why. The profiles:" % versions.DEFAULT_PROFILE,
             "", "| `verl_version` | releases | tag | recognised in an image by | default images (910b / a3) | stack of verl's Ascend image |",
             "|---|---|---|---|---|---|"]
    for entry in versions.RELEASES:
        images = " / ".join("`%s`" % entry["images"][chip] for chip in ("910b", "a3")) if entry["images"] else ""
        images = "; ".join(part for part in (images, entry["image_note"]) if part)
        cells = (entry["profile"], entry["series"], entry["tag"], entry["recognised"], images, entry["stack"])
        lines.append("| `%s` | %s | %s | %s | %s | %s |" % cells)
    lines += ["", "An image is placed by its files, not by its version string: tag v0.8.0 reports `0.8.0.dev`, as does every",
              "main commit of March to May 2026, some with 0.7.1's schema and some with 0.8.0's; release branches move after",
              "their tag. `profile_of(version, markers)` reads these markers (the version string decides only when they are",
              "not known; a version older than 0.7.0 or newer than the table has no profile, unless",
              "`verl_allow_untested_version` lets the container stage take the profile of its files):", ""]
    lines += ["- `%s`: %s" % (name, why) for name, why in versions.MARKERS.items()]
    lines += ["", "## Entry points", "", "| `verl_algorithm` | %s |" % " | ".join(profiles), "|---|%s" % ("---|" * len(profiles))]
    for key in table.CHOICES:
        lines.append("| `%s` | %s |" % (key, " | ".join("`%s` (`%s`)" % versions.entry_of(key, p) for p in profiles)))
    lines += ["", "Where verl has `recipe/` in its own tree (%s) an algorithm with a recipe runs it; from 0.7.1 `recipe/` is a git"
              % ", ".join(versions.RECIPE_IN_TREE),
              "submodule (verl-project/verl-recipe) that verl's package does not hold and whose commits import on one side of 0.9",
              "only, so DAPO runs from verl's own PPO trainer with the same reward, penalty and loss ([algorithms.md](algorithms.md)).",
              "", "## The lines that differ", "",
              "Every Hydra key `run_training.sh` renders for some profiles only; every other line is rendered for all of them",
              "(they compose and are read unchanged from 0.7.0 to 0.9.1: `tests/test_hydra_schema.py` composes them against each",
              "release's own config tree).", "", "| key | rendered for | why | source (verl file:line) |", "|---|---|---|---|"]
    for entry in versions.KEYS:
        key = "`%s*`" % entry["key"] if entry["key"].endswith(".") else "`%s`" % entry["key"]
        lines.append("| %s | %s | %s | %s |" % (key, ", ".join(entry["profiles"]), entry["why"], entry["source"]))
    lines += ["", "## What each feature bit sets, per release", "", "| bit | %s |" % " | ".join(profiles), "|---|%s" % ("---|" * len(profiles))]
    for feature in features.FEATURES:
        keys = [key for variable_keys in feature["variables"].values() for key in variable_keys] + [
            line.split("=", 1)[0] for line in feature["on_lines"]]
        cells = [", ".join("`%s`" % key.lstrip("+").replace("actor_rollout_ref.", "") for key in keys
                           if versions.rendered_for(key, p)) for p in profiles]
        lines.append("| %d %s | %s |" % (feature["bit"], feature["name"], " | ".join(cells)))
    lines += ["", "(`actor_rollout_ref.` left out of each key.) From 0.8.0 the engine workers copy `model.use_remove_padding` over",
              "the Megatron engine's own key (verl/workers/engine_workers.py:113), so bit 0 off really turns packing off there; on",
              "0.7.0 and 0.7.1 the legacy worker reads `megatron.use_remove_padding` and `model.use_remove_padding` is read by",
              "nothing.", "", "## Defaults the settings rules read", "", "| verl key | %s |" % " | ".join(profiles),
              "|---|%s" % ("---|" * len(profiles))]
    for key in versions.defaults(versions.DEFAULT_PROFILE):
        lines.append("| `%s` | %s |" % (key, " | ".join(str(versions.defaults(p)[key]) for p in profiles)))
    # The weight bridge's default: the image check imports that bridge with the model's type (_versions.weight_bridge).
    lines.append("| `%s` (the weight bridge: mbridge when True, Megatron-Bridge when False) | %s |" % (
        versions.VANILLA_MBRIDGE, " | ".join(str(versions.release(p)["vanilla_mbridge"]) for p in profiles)))
    lines += ["", "## Environment per release", "", "What `start_verl.sh` exports before Ray for the release:", "",
              "| `verl_version` | exported |", "|---|---|"]
    for entry in versions.RELEASES:
        lines.append("| `%s` | %s |" % (entry["profile"], ", ".join("`%s=%s`" % item for item in sorted(entry["env"].items())) or "-"))
    lines += ["", "`HF_DEACTIVATE_ASYNC_LOAD=1` turns off transformers 5's asynchronous loading of the checkpoint's shards",
              "(a higher host-memory peak while the model loads); verl's multi-machine guide exports it, transformers 4 does",
              "not read it."]
    lines += ["", "## Known-broken combinations", "",
              "Checked before launch: where the release documents a way out, the deploy renders it with the mask; else it stops",
              "naming the report and the same mask without the bits.", "",
              "| bits | report (its error) | why | way out: rendered for (line; model kinds) | elsewhere |", "|---|---|---|---|---|"]
    for entry in versions.BROKEN:
        out = entry["way_out"]
        rendered = ("%s (`%s`; %s)" % (", ".join(out["profiles"]), out["line"], ", ".join(out["models"])) if out else "none")
        lines.append("| %s | %s (`%s`) | %s | %s | refused: %s |" % (
            ", ".join("%d %s" % (bit, features.FEATURES[bit]["name"]) for bit in entry["bits"]), entry["report"], entry["error"],
            entry["why"], rendered, out["needs"] if out else "no way out is documented"))
    lines += ["", "## Known-good companions (the image check's note)", "", "| `verl_version` | known to work |", "|---|---|"]
    for entry in versions.RELEASES:
        lines.append("| `%s` | %s |" % (entry["profile"], "; ".join(", ".join("%s %s" % (name.replace("cann", "CANN"), combo[name])
                     for name in ("cann", "torch_npu", "vllm", "vllm_ascend", "megatron.core")) for combo in entry["known_good"])))
    lines += ["", "## Driver and firmware per CANN (the pre-check's rule)", "",
              "The pre-check reads each node's `/usr/local/Ascend/driver/version.info` and `/usr/local/Ascend/firmware/version.info`",
              "and judges both against the CANN of `verl_image` (its tag, or the profile's for verl's own images): older than the",
              "oldest Ascend HDK that CANN supports is refused, older than the HDK it is released with is a warning (vllm-ascend#15411).",
              "", "| CANN | oldest Ascend HDK (refused below) | released with (the upgrade the fix names) | source |", "|---|---|---|---|"]
    for entry in versions.CANN_HDK:
        lines.append("| %s | %s | %s | %s |" % (entry["cann"] + ("x" if entry["cann"].endswith(".") else ""),
                                                entry["oldest"] or "not stated (nothing refused)", entry["released_with"], entry["source"]))
    lines += ["", "## Adding a release", "",
              "1. One `_release(...)` entry in `plugins/module_utils/_versions.py` (and its name in `PROFILES`), the markers that",
              "   tell it (`MARKERS`, `profile_of`), and a `_key(...)` entry for each line it renders differently.",
              "2. Its wheel's sha256 in `tests/helpers/hydra_schema.py` (`WHEELS`) and its expected differences in",
              "   `tests/test_hydra_schema.py` (from the wheel's files, not from the table).",
              "3. Run `.venv/bin/python tools/settings_table.py --write` (rewrites this page).", ""]
    return "\n".join(lines)


def load():
    spec = yaml.safe_load((META / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
    rules = yaml.safe_load((META / "setting_rules.yml").read_text())
    return spec, rules


def entries():
    """(name, merged entry) in the table's order: the type's bounds, then the spec, then the setting's rule, merged as the
    settings check merges them (_launch_config.table)."""
    return _packaged("_launch_config").table(*load()).items()


def _plain(description):
    text = " ".join(description) if isinstance(description, list) else description
    return re.sub(r"\b[COMVI]\(([^)]*)\)", r"\1", text)


def _yaml_value(name, entry):
    """The default as YAML after `name:`: a scalar on the line, a non-empty list or mapping as indented items."""
    if entry.get("default_from"):
        return ' "{{ %s }}"' % entry["default_from"]
    default = entry.get("default")
    if isinstance(default, list) and default:
        return "".join("\n  - " + _scalar(item) for item in default)
    if isinstance(default, dict) and default:
        return "".join("\n  %s: %s" % (_scalar(key), _scalar(value)) for key, value in default.items())
    return " " + _scalar(default)


def _scalar(value):
    return yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("...").strip()


def defaults_text():
    lines = ["---", "# Every setting of verl.deploy with its default. GENERATED from the settings table",
             "# (roles/verl/meta/argument_specs.yml and setting_rules.yml): edit the table, then run",
             "# `.venv/bin/python tools/settings_table.py --write`. Bounds and rules: docs/settings.md.",
             "# Precedence: what you state (extra vars, AWX survey, inventory) > what was detected > these."]
    for name, entry in entries():
        if entry.get("section"):
            lines += ["", "# --- %s" % entry["section"]]
        lines += textwrap.wrap(_plain(entry["description"]), width=118, initial_indent="# ", subsequent_indent="# ")
        lines.append(name + ":" + _yaml_value(name, entry))
    return "\n".join(lines) + "\n"


def bounds(entry):
    kind = entry["type"]
    if entry.get("choices"):
        return "one of " + ", ".join("`%s`" % c for c in entry["choices"])
    if kind == "int":
        return "%d to %d" % (entry["min"], entry["max"])
    if kind == "float":
        return "greater than %g, at most %g" % (entry["above"], entry["max"])
    if kind == "bool":
        return "true or false"
    rule = entry.get("rule")
    if entry.get("secret"):
        return "a secret: only whether it is set is checked"
    described = {
        "path": "absolute, canonical path" + ("; not / nor a system folder" if entry.get("use") else "")
                + (" (resolved through links on the controller)" if entry.get("use") == "controller" else "")
                + ("; empty: not used" if entry.get("empty") else ""),
        "paths": "absolute, canonical paths", "npu_smi": "a file named `npu-smi`, not in /dev, /proc, /run, /sys",
        "name": "letters, digits, `.` `_` `-`", "url": "http(s) URL",
        "image": "Docker image reference" + ("; empty: chosen for the chip" if entry.get("empty") else ""),
        "images": "`910b` and/or `a3`, each a Docker image reference",
        "address": "IPv4 address (dotted decimal) or DNS name", "ipv4": "IPv4 address (dotted decimal)", "ifname": "interface name",
        "requirement": "pip requirement (not an option)", "ray_args": "`--option[=value]` items, `--temp-dir=` absolute", "overrides": "Hydra overrides",
        "loggers": "each one of %s (a list, or one string separated by commas)" % ", ".join(
            "`%s`" % name for name in _packaged("_launch_config").LOGGERS) if rule == "loggers" else "",
        "volumes": "`host:container[:ro]`, absolute; host not / nor a system folder",
        "env": "names the NPU stack reads (the table below)",
        "devices": "NPU ids 0 to %d, each once, at most %d" % (entry.get("max", 1023), entry.get("max_items", 64)),
        "mask": "seven 0/1 characters",
        "fail_on": "each one of %s (a list, or one string separated by commas; `[]`: none)" % ", ".join(
            "`%s`" % name for name in _packaged("_training_state").FAIL_ON) if rule == "fail_on" else "",
    }.get(rule, "text")
    if kind in ("list", "dict") and rule not in ("devices",):
        described += "; at most %d items of %d characters" % (entry["max_items"], entry["max_length"])
    elif kind == "str" and rule not in ("mask",):
        described += "; at most %d characters" % entry["max_length"]
    return described


def docs_text():
    lines = ["# Settings", "", "<!-- %s; do not edit. -->" % GENERATED, "",
             "Every setting of verl.deploy: its type, default, bounds and meaning. Each is checked on the controller",
             "before anything is written or any host changes (`verl.deploy.launch_config`); no string may hold a",
             "control character (a new line, a tab, an escape) or a format character (a bidi override such as U+202E, a",
             "zero-width character), and every number is finite. Every value a message shows is escaped (`\\n`, `\\x1b`,",
             "`U+202E`) and cut.", "",
             "Beyond each setting's own rule:", "",
             "- A text setting (type str) given a YAML boolean or number is refused with the quoting fix: unquoted, YAML reads",
             "  `no`, `off`, `yes`, `on` as booleans and `0123`, `1e3` as numbers, which the scripts would get as `False`, `83`,",
             "  `1000.0` (`verl_project_name: \"no\"`; `-e name=value` is always text).",
             "- Inventory host names become a folder under `verl_output_dir` and appear in the scripts: letters, digits,",
             "  `.` `_` `-`, starting and ending with a letter or digit, no `..`, at most 253 characters (the address goes",
             "  into `ansible_host`). `verl_output_dir`, resolved through links, is not a system folder, and the host's folder",
             "  and scripts in it are not links.",
             "- Paths are absolute and canonical (no `..`, `.` or `//`, a leading `//` included) and judged on that form;",
             "  those mounted into the container or written or chmodded to are never `/` nor a system folder: a deny-list",
             "  that covers the FHS (`/usr/**`, `/etc/**`, `/var/lib/**` but `/var/lib/verl-deploy`, `/proc`, `/sys`, `/dev`,",
             "  `/boot`, `/run`, `/root` on the host, ...; the folders `/`, `/home`, `/opt`, `/tmp`, `/var` ... themselves).",
             "  A mounted path holds no `:` or `,` (a volume spec would split). A dataset's folder is mounted, so it is not `/`;",
             "  the stage folder `<verl_host_stage_dir>/<verl_container_name>` is judged whole.",
             "- `verl_extra_env` names are taken from an allow-list of what the NPU training stack reads (the table at the",
             "  end of this page); every other name is refused with the reason (`PYTHONPATH`, `GCONV_PATH`, `LD_*`, `BASH_ENV`",
             "  ... make a program load code), as are names under an allowed prefix that say where code is loaded from",
             "  (`*_PATH`, `*_HOME`, `*_OPP*`, `*_PLUGINS` ...), every `SWANLAB_*KEY*` spelling, the device binding",
             "  (`*VISIBLE_DEVICES*`, `RAY_EXPERIMENTAL_NOSET_*`) and the scripts' own variables; values are quoted.",
             "- `verl_extra_overrides` are one Hydra override each, parsed with hydra-core's own override parser (the",
             "  trainer's): no `hydra.*` key, nor one naming Hydra in other letters (`HYDRA.run.dir`: Hydra compares keys as",
             "  written, so it is an unknown key of verl's config, refused at the trainer's start); no `_target_`, `_args_`,",
             "  `_partial_`, `_recursive_` or `_convert_` anywhere in the key or the value (nested dicts and lists too: Hydra",
             "  would call a Python callable); no interpolation or resolver `${...}`; no sweep; no key that a checked setting",
             "  sets (the message names the setting to use).",
             "  A MoE model's expert parallelism is given here (`actor_rollout_ref.actor.megatron.expert_model_parallel_size=<EP>`,",
             "  optionally `...expert_tensor_parallel_size=<ETP>`): the settings check refuses an EP that does not divide the",
             "  model's experts, an EP on a dense model, and an ETP x EP x PP that does not divide the NPUs (rules C24, C25 in",
             "  [design.md](design.md#the-parallelism-rules-and-their-ids)); the memory estimate splits the experts by it.",
             "- Addresses (`verl_master_addr`, `verl_node_ip`, and the head's `verl_node_ip` or `ansible_host` when they give",
             "  the head's address) are read as the resolver reads them: a value made of numbers and dots, or 0x-hex parts, is",
             "  an IPv4 address in dotted decimal or is refused. inet_aton's legacy forms connect elsewhere than they seem",
             "  (`010.0.0.5` is 8.0.0.5; `167772165`, `0xa.0.0.5` and `10.5` are 10.0.0.5), and digits and dots that are no",
             "  address are no host name either (RFC 1123); the message names the address and the dotted-decimal fix. Names",
             "  that start with a digit (`3com.example`) stay names.",
             "- A value larger than 65536 characters, 2000 items in all or 4 levels deep (a YAML alias bomb) is refused at",
             "  once; every value echoed in a message is cut to about 60 characters.",
             "- A `verl_*` variable that is not a setting is a likely typo and is warned about; one whose name looks like the",
             "  key's (`verl_swanlab_apikey`) is refused, and its value never reaches the check.", "",
             "## Adding a setting", "",
             "1. Declare it in `roles/verl/meta/argument_specs.yml` (type, default, description); when its type's bounds do not",
             "   fit, or it needs a rule (a path, a name ...), give it a line in `roles/verl/meta/setting_rules.yml` beside it.",
             "2. Run `.venv/bin/python tools/settings_table.py --write` (rewrites `roles/verl/defaults/main.yml` and this page).",
             "3. Use it in a template as `_verl_launch.<name without verl_>` and test it.", ""]
    for name, entry in entries():
        if entry.get("section"):
            lines += ["## %s" % entry["section"], "", "| variable | type | default | allowed | |", "|---|---|---|---|---|"]
        default = ("follows `%s`" % entry["default_from"]) if entry.get("default_from") else "`%s`" % _scalar(entry.get("default"))
        if entry.get("secret"):
            default += " (a secret)"
        lines.append("| `%s` | %s | %s | %s | %s |" % (name, entry["type"], default.replace("|", "\\|"), bounds(entry),
                                                       _plain(entry["description"]).replace("|", "\\|")))
    lines += ["", "## The variables verl_extra_env may set", "",
              "Generated from the allow-list in `plugins/module_utils/_environment.py`, the one place it is defined.", "",
              "| name | | read by | e.g. |", "|---|---|---|---|"]
    for pattern, kind, reader, examples in environment().ALLOWED:
        lines.append("| `%s%s` | %s | %s | %s |" % (pattern, "*" if kind == "prefix" else "", kind, reader, examples))
    lines += ["", "Refused even under an allowed prefix: names ending in `_PATH` (but `ASCEND_PROCESS_LOG_PATH`), `_HOME`,",
              "`_ROOT`, `_DIR`, `_LIB(S)`, `_PLUGIN(S)`, `_MODULE(S)` or holding `OPP` (where code is loaded from); the device",
              "binding: %s" % environment().DEVICE_BINDING_WHY.split(". Fix")[0] + ".", ""]
    out = []
    for line in lines:
        if line.startswith("## ") and out and out[-1] != "":
            out.append("")
        out.append(line)
    return "\n".join(out)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: tools/settings_table.py --write")
    DEFAULTS_FILE.write_text(defaults_text())
    DOCS_FILE.write_text(docs_text())
    ALGORITHMS_FILE.write_text(algorithms_text())
    VERSIONS_FILE.write_text(versions_text())
    for page in (TROUBLESHOOTING_FILE, TROUBLESHOOTING_ZH_FILE):
        page.write_text(troubleshooting_text(page))
    WRITTEN = (DEFAULTS_FILE, DOCS_FILE, ALGORITHMS_FILE, VERSIONS_FILE, TROUBLESHOOTING_FILE, TROUBLESHOOTING_ZH_FILE)
    print("wrote %s" % ", ".join(str(path.relative_to(REPO)) for path in WRITTEN))
