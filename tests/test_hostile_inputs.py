"""Hostile and malformed input: nothing a user, an inventory or an AWX survey supplies can run a command,
escape a folder, leak the key or wrap a number.

Every case below is refused by the launch configuration (the launch_config module's own code, run in
process) before anything is written: no configuration comes back, so nothing can be rendered; the
error names the right variable and stays short. Values that are legal but hostile (quotes, `$(...)`,
backticks inside environment values, overrides and ray options) are rendered and both scripts are
EXECUTED with stand-in `ray`, `ip` and `python3` first on PATH: no payload runs, and each reaches its
program as one literal argument. Positive controls show the payloads do run when the checks are
bypassed. A few cases go through playbooks/render.yml and deploy.yml end to end.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.verl.deploy.plugins.module_utils._inputs import CONTROL
from ansible_collections.verl.deploy.plugins.module_utils._secrets import SECRETS
from helpers.launch_helpers import REPO, RULES, SECRET_KEY, SPEC, launch, launch_ok, render, stand_in_path

# A payload touches $VERL_PWNED (set when the scripts run): if the file exists, a payload ran.
TOUCH = 'touch "$VERL_PWNED"'
SUBST = "$(%s)" % TOUCH
BACKTICK = "`%s`" % TOUCH
NEWLINE = "x\n%s" % TOUCH
QUOTE_BREAK = "x'; %s; '" % TOUCH
DQUOTE_BREAK = 'x"; %s; "' % TOUCH

# --- The cases: (expected variable, launch() arguments).
CASES = []


def case(variable, **kwargs):
    CASES.append(pytest.param(variable, kwargs, id="%s-%d" % (variable, len(CASES))))


# Inventory host names (the host being checked and the head).
for bad in ["n1\n" + TOUCH, "n" + SUBST, "n" + BACKTICK, 'n"; %s; "' % TOUCH, "..", "../../x", "a/b", ".", "", "-rf",
            "host name", "n1;id", "n1|id", "n1&id", "x" * 300, "n1\r", "n1\t", "n1\x00", "n1'", "n1$IFS", "node..1", "/etc",
            "n1\u2028x", "*", "~root", "n1-", "_n1"]:
    case("inventory_hostname", host=bad, head={"name": bad, "ansible_host": "10.0.0.1"})
for bad in ["h" + SUBST, "../h", "h\n" + TOUCH]:
    case("inventory_hostname", host="worker1", is_head=False, nnodes=2, head={"name": bad, "ansible_host": "10.0.0.1"})

# Escapes and format characters (round 3): refused, and shown escaped (\x1b, U+202E), never raw.
for bad in ["n1\x1b[2J", "n1\u202eexe.sh", "n1\u200b", "n1\ufeff", "n1\x1b]0;title\x07"]:
    case("inventory_hostname", host=bad, head={"name": bad, "ansible_host": "10.0.0.1"})
# Every text setting of the table (the key is never shown, so it has nothing to show raw; its own cases are below).
for name in (name for name, option in SPEC.items() if option["type"] == "str" and name not in SECRETS):
    for bad in ["a\u202eb", "a\x1b[31mb", "a\u2066b"]:
        case(name, **{name: bad})

# Paths: every path setting, with payloads, traversal, relative, too long; / and system folders where mounted or written.
PATH_SETTINGS = [name for name, rule in RULES["settings"].items() if rule.get("rule") == "path"]
for name in PATH_SETTINGS:
    for bad in ["/x/" + SUBST, "/x\n" + TOUCH, "relative/x", "/a/../../etc/x", "/x y", "/x" * 600]:
        case(name, **{name: bad})
    if RULES["settings"][name].get("use"):
        for bad in ["/", "/etc", "/proc/self", "/usr"]:
            case(name, **{name: bad})
for name in ("verl_train_file", "verl_test_file"):
    case(name, **{name: "/train.parquet"})
for bad in [["relative.sh"], ["/x/" + SUBST], ["/a/../b"], ["/x\n" + TOUCH]]:
    case("verl_ascend_env_scripts", verl_ascend_env_scripts=bad)

# Numbers: every whole-number setting above its bound, far above it (wraps in bash arithmetic), a payload.
for name, option in SPEC.items():
    if option["type"] != "int":
        continue
    rule = dict(RULES["types"]["int"], **RULES["settings"].get(name, {}))
    for bad in [rule["max"] + 1, 10 ** 30, SUBST]:
        case(name, **{name: bad})
    case(name, **{name: rule["min"] - 1})
for name in (name for name, option in SPEC.items() if option["type"] == "float"):
    for bad in [float("inf"), float("nan"), "inf", "-inf", "1e400", -1, 2, 0, "0x10", True, SUBST]:
        case(name, **{name: bad})
for bad in ["1.5", "1e3", True, [4], {"a": 1}, "4;id"]:
    case("verl_train_steps", verl_train_steps=bad)

# Names: every setting the rules table checks as a name.
for name in (name for name, rule in RULES["settings"].items() if rule.get("rule") == "name"):
    for bad in [SUBST, "a\nb", "a" * 200, "a b", "-x", QUOTE_BREAK]:
        case(name, **{name: bad})

# The image: Docker's reference grammar.
for bad in ["a\n" + TOUCH, "x/UPPER", "x:" + SUBST, "x;" + TOUCH, "x" * 600, "quay.io/x:tag with space", "x@sha256:zz",
            "-x", "x:", "x//y", "http://quay.io/x", "x:t\u00e9"]:
    case("verl_image", verl_image=bad)
# The images by chip: known families only, each an image reference.
for bad in [{"a3": ""}, {"a3": "x;" + TOUCH}, {"950": "quay.io/x:t"}, {"a3\n" + TOUCH: "x"}, {"a3": ["x"]}, "x:y", ["x"]]:
    case("verl_image_by_chip", verl_image_by_chip=bad)

# Environment names that change how bash (or the loader, or python) runs, malformed names, the scripts' own names.
for bad in ["BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "PROMPT_COMMAND", "BASH_FUNC_x%%", "BASH_FUNC_ls",
            "LD_PRELOAD", "LD_AUDIT", "CDPATH", "GLOBIGNORE", "PYTHONSTARTUP", "bash_env", "A\n", "A\n" + TOUCH, "A B", "1A", "A=B",
            "", "PATH", "MASTER_ADDR", "ROLE", "RAY_START_ARGS", "SWANLAB_API_KEY", "x" * 200]:
    case("verl_extra_env", verl_extra_env={bad: "/tmp/x"})
# By allow-list (round 3): what makes python or libc load code at the next start, the key under other spellings,
# and what overrides the device binding the scripts set up.
for bad in ["PYTHONPATH", "PYTHONUSERBASE", "PYTHONWARNINGS", "BROWSER", "PYTHONHOME", "GCONV_PATH", "LD_LIBRARY_PATH", "NODE_OPTIONS",
            "PERL5OPT", "SWANLAB_APIKEY", "swanlab_api_key", "SWANLAB_KEY", "MY_SWANLAB_TOKEN_KEY", "ASCEND_OPP_PATH", "ASCEND_CUSTOM_OPP_PATH",
            "VLLM_PLUGINS", "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES", "ASCEND_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES", "ASCEND_DEVICE_ID", "RAY_ADDRESS", "HOSTNAME"]:
    case("verl_extra_env", verl_extra_env={bad: "/tmp/x"})
for bad in ["a\n" + TOUCH, ["x"], None, "x" * 5000, True]:
    case("verl_extra_env", verl_extra_env={"HCCL_BUFFSIZE": bad})
case("verl_extra_env", verl_extra_env={"A%d" % i: "1" for i in range(100)})
case("verl_extra_env", verl_extra_env="HCCL_BUFFSIZE=300")

# Hydra overrides: one line each.
for bad in [["a=b\n" + TOUCH], [SUBST], [" a=b"], ["a;b=c"], [""], ["x" * 2000], ["a=b"] * 300, [1], ["a=b\r"], "a=b",
            ["a b=c"], ["+hydra.callbacks.x._target_=os.system"], ["hydra.run.dir=/etc"], ["++hydra.searchpath=[file:///tmp]"],
            ["+trainer.x._target_=subprocess.run"], ["~hydra"], ["+a._partial_=true"], ["hydra/launcher=x"]]:
    case("verl_extra_overrides", verl_extra_overrides=bad)

# Hydra overrides read by meaning (round 3): instantiation keys in nested values, interpolations and resolvers,
# sweeps, shell syntax Hydra cannot parse, and keys a checked setting owns.
for bad in ["actor_rollout_ref.actor.x={_target_:os.system,_args_:[id]}", "a.b={c:{_target_:subprocess.run,args:[id]}}",
            "a=[1,{_partial_:true}]", "+a._recursive_=false", "a._convert_=all", "trainer.experiment_name=${oc.env:SWANLAB_API_KEY}",
            "trainer.x=${oc.env:SWANLAB_API_KEY}", "a='${oc.env:X}'", "a=str(${x})", "a={b:'${x}'}", "a=1,2", "a=choice(1,2)",
            "a=range(1,3)", "a=glob(*)", "+x@hydra.callbacks=y", "a=$(id)", "a=`id`", "trainer.total_training_steps=5",
            "actor_rollout_ref.actor.optim={lr:1}", "~trainer.project_name", "++data.train_files=/etc/passwd",
            "actor_rollout_ref.model.use_remove_padding=True", "trainer={}"]:
    case("verl_extra_overrides", verl_extra_overrides=[bad])
# Hydra named in other letters (issue 28): not Hydra's own settings (Hydra compares keys as written) but an unknown key.
HYDRA_CASE_VARIANTS = ["HYDRA.run.dir=/tmp/x", "Hydra.run.dir=x", "+HYDRA.x=1", "~Hydra", "~HYDRA.run", "++HYDRA.callbacks.x=1",
                       "HYDRA/launcher=basic", "+x@HYDRA.callbacks=y", "hYdRa.job.chdir=true"]
for bad in HYDRA_CASE_VARIANTS:
    case("verl_extra_overrides", verl_extra_overrides=[bad])

# ray start options.
for bad in [["--x\n" + TOUCH], ["num-cpus=4"], [""], ["--" + "x" * 600], [SUBST], ["-x"]]:
    case("verl_ray_start_args", verl_ray_start_args=bad)

# Paths judged on their canonical form against a deny-list that covers the FHS (round 3): a leading `//`,
# `/./`, `..`, trailing spaces, engine state, root's home, `:` where a volume spec splits.
for name in PATH_SETTINGS:
    use = RULES["settings"][name].get("use")
    for bad in (["//etc", "//usr/bin", "/./etc/x", "/x/../usr/lib", "/etc ", "//proc/self/cwd", "/usr/local/lib/python3.11",
                 "/var/lib/docker", "/run/containerd", "/boot/x", "/sys/x"] if use else []) + (["/root/x", "/var/lib/x"] if use != "container" else []):
        case(name, **{name: bad})
    if use == "mount":
        for bad in ["/logs:ro", "/a:b", "/data/x:/etc"]:
            case(name, **{name: bad})
for bad in ["/", "/var/run/docker.sock", "/usr/bin/python3", "/usr/local/sbin", "/run/npu-smi", "//dev/npu-smi", "relative/npu-smi",
            "/x/../proc/npu-smi", "/usr/local/sbin/npu-smi:ro"]:
    case("verl_npu_smi_path", verl_npu_smi_path=bad)
# The stage folder is <verl_host_stage_dir>/<verl_container_name>: both parts, and the folder they make.
for stage, container in [("//usr", "bin"), ("/usr/local/lib", "python3.11"), ("/var", "lib"), ("/", "etc")]:
    case("verl_host_stage_dir", verl_host_stage_dir=stage, verl_container_name=container)

# Extra bind mounts.
for bad in ["/:/x", "/etc:/etc", "/a/../etc:/x", "/var/lib/docker:/x", "//etc:/x", "/x:/usr/bin", "/x:/etc/y", "/data,x:/y",
            "/var/run/docker.sock:/var/run/docker.sock", "/root/.ssh:/x", "a:b", "/x:/y:rwx", "/x:/y\n" + TOUCH, "/x", "/x:relative", "/x:/", "/x:/y:ro:z",
            "/x/" + SUBST + ":/y"]:
    case("verl_container_extra_volumes", verl_container_extra_volumes=[bad])

# SwanLab.
for bad in ["http://x" + SUBST, "ftp://x", "http://x\n" + TOUCH, "http://x y", "http://" + "x" * 600, "http://x`id`", "http://h\u00e9",
            "http://x'y", "http://x\\y"]:
    case("verl_swanlab_host", verl_swanlab_enabled=True, verl_swanlab_host=bad)
for bad in ["cloud\n", "evil", "offline;" + TOUCH]:
    case("verl_swanlab_mode", verl_swanlab_enabled=True, verl_swanlab_mode=bad)
for bad in ["--index-url=http://evil", "swanlab\n--x", "", "-e/x"]:
    case("verl_swanlab_package", verl_swanlab_package=bad)
for bad in [["--x\n" + TOUCH], "--no-index"]:
    case("verl_swanlab_pip_args", verl_swanlab_pip_args=bad)

# Trackers: only the names verl takes, in a list or one string.
for bad in [["neptune"], "console;" + TOUCH, ["tensorboard\n" + TOUCH], "console," + SUBST, [{"x": 1}], {"tensorboard": 1}, 5, ["x" * 100]]:
    case("verl_loggers", verl_loggers=bad)

# Network.
for bad in [SUBST, "a b", "localhost", "1.2.3.4\n", "-x", "a" * 300]:
    case("verl_master_addr", verl_master_addr=bad)
for bad in ["1.2.3.4;id", "999.1.1.1", "x", "1.2.3.4\n" + TOUCH]:
    case("verl_node_ip", verl_node_ip=bad)
for bad in ["eth0;id", "a" * 16, "eth0\n" + TOUCH, "eth 0"]:
    case("verl_socket_ifname", verl_socket_ifname=bad)
for bad in [SUBST, "1.2.3.4;" + TOUCH]:
    case("verl_master_addr", head={"name": "node1", "ansible_host": bad})
# Addresses in inet_aton's legacy forms (issue 28): the resolver reads them as an address before any name lookup,
# another one than they seem (010.0.0.5 is 8.0.0.5) or one in a form nobody reviews (167772165 is 10.0.0.5).
LEGACY_ADDRESSES = ["010.0.0.5", "167772165", "0xa.0.0.5", "0x0a000005", "10.5", "10.0.5", "192.168.010.1", "10.0.0.08", "999.1.1.1",
                    "1.2.3.4.5"]
for bad in LEGACY_ADDRESSES:
    case("verl_master_addr", verl_master_addr=bad)
    case("verl_node_ip", verl_node_ip=bad)
    case("verl_master_addr", head={"name": "node1", "ansible_host": bad})
    case("verl_master_addr", head={"name": "node1", "node_ip": bad, "ansible_host": "10.0.0.1"})

# NPUs and the mask.
for bad in ["0,1;id", "-1", "99999", list(range(100)), "0\n1", [True], "a", "", SUBST]:
    case("verl_npu_devices", verl_npu_devices=bad)
for bad in ["0000000\n", SUBST, "1" * 10000, 1010, "0000002", None]:
    case("verl_feature_mask", verl_feature_mask=bad)
case("mask", mask="1111111", verl_feature_mask="0000000")

# The algorithm and the resume mode: one of their choices, nothing else.
for bad in ["DAPO", "ppo", "grpo;" + TOUCH, "grpo\n", SUBST, "", ["grpo"], True]:
    case("verl_algorithm", verl_algorithm=bad)
for bad in ["resume", "Auto", "disable\n" + TOUCH, SUBST, "", ["auto"], False]:
    case("verl_resume_mode", verl_resume_mode=bad)
# The checkpoint to resume from: exactly with resume_path, and a global_step_<N> folder (verl reads N from its name).
for mode, bad in [("resume_path", ""), ("resume_path", "   "), ("auto", "/ckpt/global_step_4"), ("disable", "/ckpt/global_step_4"),
                  ("resume_path", "/ckpt"), ("resume_path", "/ckpt/global_step_"), ("resume_path", "/ckpt/global_step_4x"),
                  ("resume_path", "/ckpt/global_step_4/actor"), ("resume_path", "/ckpt/global_step_-1"),
                  ("resume_path", "/ckpt/global_step_4;" + TOUCH), ("resume_path", "/ckpt/global_step_" + SUBST), ("resume_path", "/")]:
    case("verl_resume_from_path", verl_resume_mode=mode, verl_resume_from_path=bad)

# The verl release to render for: one of the release table's profiles, nothing else.
for bad in ["0.6.0", "1.0.0", "0.7.0;id", SUBST, "0.7.0\n" + TOUCH, "latest", "x" * 40]:
    case("verl_version", verl_version=bad)
# What makes status.yml fail: a list of the states it knows.
for bad in [{"crashed": 1}, [["crashed"]], "crashed;" + TOUCH]:
    case("verl_status_fail_on", verl_status_fail_on=bad)

# Booleans: every one of the table.
for name in (name for name, option in SPEC.items() if option["type"] == "bool"):
    for bad in ["maybe", [1], SUBST]:
        case(name, **{name: bad})

# Unknown variables that look like the key's name: refused, the value never comes here.
for bad in ["verl_swanlab_apikey", "verl_swanlab_key", "verl_swanlab_api_token", "verl_swanlab_secret", "verl_swanlab_api_key2",
            "verl_swanlab_password"]:
    case(bad, unknown=[bad])

# Huge or deeply nested input (what a YAML alias bomb becomes): refused at once, the message short.
_BOMB = ["x"] * 9
for _level in range(8):
    _BOMB = [_BOMB] * 9
_DEEP = "x"
for _depth in range(200):
    _DEEP = [_DEEP]
case("verl_extra_overrides", verl_extra_overrides=_BOMB)
case("verl_extra_env", verl_extra_env={"A": _DEEP})
case("verl_project_name", verl_project_name="x" * 100000)
case("verl_extra_overrides", verl_extra_overrides=["a=b"] * 5000)
case("verl_npu_devices", verl_npu_devices=_DEEP)


def test_there_are_at_least_150_cases_across_every_setting():
    assert len(CASES) >= 150, len(CASES)
    covered = {param.values[0] for param in CASES}
    # The key is never checked here: only whether it is set comes to the check (see the look-alike cases).
    assert set(SPEC) - covered == set(SECRETS)
    assert "inventory_hostname" in covered


@pytest.mark.parametrize(("variable", "kwargs"), CASES)
def test_refused_before_anything_is_written(variable, kwargs):
    started = time.monotonic()
    config, errors, _warnings = launch(**kwargs)
    elapsed = time.monotonic() - started
    assert config is None, "accepted: %r" % (kwargs,)
    assert variable in [e["variable"] for e in errors], errors
    # Messages stay small: the value is cut, the whole report is a few lines.
    assert all(len(e["msg"]) < 700 for e in errors), [len(e["msg"]) for e in errors]
    assert len(json.dumps(errors)) < 4000
    assert elapsed < 1.0
    # The payload never appears unshortened where a value is echoed; no control or format character is printed raw.
    for error in errors:
        assert "\n" not in error["msg"] and "\n" not in json.dumps(error["value"]).replace("\\n", "")
        assert not CONTROL.search(error["msg"]) and not CONTROL.search(str(error["value"])), error


# --- The key by value (round 3): after templating, no other setting may hold the SwanLab key, as it is, base64- or
# URL-encoded; the stage-0 check (settings_problems, on the controller, where the key is) names the setting and
# shows neither the value nor the key anywhere in its report.
def _key_forms_of(key):
    import base64
    import urllib.parse

    return [key, base64.b64encode(key.encode()).decode(), urllib.parse.quote(key, safe=""), urllib.parse.quote_plus(key)]


KEY_CASES = [
    ("verl_experiment_name", SECRET_KEY), ("verl_project_name", "p-" + SECRET_KEY), ("verl_extra_env", {"HCCL_X": SECRET_KEY}),
    ("verl_extra_env", {"SWANLAB_APIKEY": SECRET_KEY}), ("verl_ray_start_args", ["--x=" + SECRET_KEY]),
    ("verl_swanlab_host", "http://u:%s@h:8000" % SECRET_KEY), ("verl_model_path", "/m/" + SECRET_KEY),
    ("verl_extra_overrides", ["trainer.x=" + SECRET_KEY]), ("verl_swanlab_workspace", _key_forms_of(SECRET_KEY)[1]),
    ("verl_log_dir", "/l/" + _key_forms_of(SECRET_KEY)[2]), ("verl_container_extra_volumes", ["/a/%s:/b" % SECRET_KEY]),
    ("mask", SECRET_KEY), ("verl_experiment_name", _key_forms_of(SECRET_KEY)[1].rstrip("=")),
]


@pytest.mark.parametrize(("variable", "value"), KEY_CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(KEY_CASES)])
def test_a_setting_that_holds_the_key_is_refused_without_showing_it(variable, value):
    from ansible_collections.verl.deploy.plugins.filter.settings_problems import settings_problems

    from helpers.launch_helpers import settings

    host = dict(settings(), verl_swanlab_api_key=SECRET_KEY, ansible_host="10.0.0.1", **{variable: value})
    problems = settings_problems({"node1": host}, head="node1", spec=SPEC, rules=RULES)
    assert variable in [p["variable"] for p in problems], problems
    text = json.dumps(problems)
    assert not any(form in text for form in _key_forms_of(SECRET_KEY)), text


def test_the_launch_config_refuses_a_setting_that_holds_the_key_and_masks_it():
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import ARGUMENT_SPEC, evaluate
    from ansible_collections.verl.deploy.plugins.module_utils._secrets import key_forms

    from helpers.launch_helpers import settings

    params = {name: option.get("default") for name, option in ARGUMENT_SPEC.items()}
    params.update(settings=settings(verl_experiment_name=SECRET_KEY), spec=SPEC, rules=RULES, host="node1", is_head=True, nnodes=1,
                  head={"name": "node1", "ansible_host": "10.0.0.1"}, detected={})
    result, _warnings, masked = evaluate(params, key_forms=key_forms(SECRET_KEY))
    assert result["failed"] and "verl_experiment_name" in result["msg"] and SECRET_KEY not in json.dumps(result)
    assert SECRET_KEY in masked


# --- Legal but hostile values: rendered, executed, inert.
FAKE_RAY = """#!/bin/bash
# Stand-in ray: records its arguments and, at start, its environment; status answers once started.
printf '%s\\0' "$@" >> "$VERL_TEST_RECORD.ray"
case "$1" in
status) [ -f "$VERL_TEST_RECORD.started" ] || exit 1; echo " 0.0/8.0 NPU" ;;
start) touch "$VERL_TEST_RECORD.started"; env -0 > "$VERL_TEST_RECORD.env" ;;
esac
exit 0
"""
FAKE_GETENT = """#!/bin/bash
echo "10.0.0.1 STREAM $2"
"""
FAKE_IP = """#!/bin/bash
case "$*" in
*"route get"*) echo "10.0.0.1 dev eth7 src 10.0.0.1 uid 0" ;;
*"addr show"*) echo "2: eth7    inet 10.0.0.1/24 brd 10.0.0.255 scope global eth7" ;;
esac
"""
HOSTILE_BUT_LEGAL = [
    {"verl_extra_env": {"HCCL_BUFFSIZE": SUBST, "HCCL_X": BACKTICK, "HCCL_Y": QUOTE_BREAK, "HCCL_Z": DQUOTE_BREAK}},
    # Hydra's parser takes shell syntax only inside a quoted string: each reaches the trainer as one literal argument.
    {"verl_extra_overrides": ["trainer.a='%s'" % SUBST, "trainer.b='%s'" % BACKTICK, "trainer.c='%s'" % QUOTE_BREAK.replace("'", "\\'"),
                              "trainer.d='%s'" % DQUOTE_BREAK]},
    {"verl_ray_start_args": ["--temp-dir=/data/" + SUBST, "--x=" + BACKTICK, "--y=" + QUOTE_BREAK]},
    {"verl_model_path": "/m/~x@y%+-1", "verl_experiment_name": "a-b.c_d", "verl_project_name": "p.q-r_s"},
    {"verl_swanlab_enabled": True, "verl_swanlab_mode": "offline", "verl_swanlab_workspace": "w-1.2"},
]


def _execute(tmp_path, config):
    folder = tmp_path / "node"
    folder.mkdir()
    for name in ("start_verl.sh", "run_training.sh"):
        (folder / name).write_text(render(config, name))
    bin_dir = stand_in_path(tmp_path)
    for name, text in (("ray", FAKE_RAY), ("getent", FAKE_GETENT), ("ip", FAKE_IP)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    pwned, record = tmp_path / "PWNED", tmp_path / "record"
    # A CANN environment already set (this machine has none): start_verl.sh would stop before Ray without one.
    env = {"PATH": "%s:%s" % (bin_dir, os.environ["PATH"]), "VERL_PWNED": str(pwned), "VERL_TEST_RECORD": str(record),
           "HOME": str(tmp_path), "ASCEND_HOME_PATH": "/opt/cann-stand-in"}
    proc = subprocess.run(["bash", str(folder / "start_verl.sh")], env=env, capture_output=True, text=True, timeout=60, check=False)
    argv_file = Path(str(record) + ".argv")
    argv = argv_file.read_text().split("\0")[:-1] if argv_file.exists() else []
    ray_file = Path(str(record) + ".ray")
    ray_argv = ray_file.read_text().split("\0")[:-1] if ray_file.exists() else []
    env_file = Path(str(record) + ".env")
    ray_env = dict(item.split("=", 1) for item in env_file.read_text().split("\0")[:-1]) if env_file.exists() else {}
    return proc, pwned.exists(), argv, (ray_argv, ray_env)


@pytest.mark.parametrize("overrides", HOSTILE_BUT_LEGAL)
def test_legal_hostile_values_are_inert_when_the_scripts_run(tmp_path, overrides):
    config = launch_ok(verl_log_dir=str(tmp_path / "logs"), verl_workdir=str(tmp_path), verl_swanlab_log_dir=str(tmp_path / "sw"),
                       **overrides)
    proc, pwned, argv, (ray_argv, ray_env) = _execute(tmp_path, config)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not pwned, "a payload ran"
    assert "trainer.device=npu" in argv
    for line in overrides.get("verl_extra_overrides", []):
        assert line in argv
    for arg in overrides.get("verl_ray_start_args", []):
        assert arg in ray_argv
    for name, value in overrides.get("verl_extra_env", {}).items():
        assert ray_env[name] == value


# Positive controls: the same harness sees a payload run when the checks are bypassed.
@pytest.mark.parametrize("bypass", [
    lambda c: c.update(host="n1\n%s #" % TOUCH),
    lambda c: c.update(extra_env={"BASH_ENV": "%s/evil.sh" % c["workdir"]}),
    lambda c: c.update(max_prompt_length="$(%s)" % TOUCH),
], ids=["host-name-newline", "bash-env", "unquoted-number"])
def test_the_harness_sees_a_payload_run_when_the_checks_are_bypassed(tmp_path, bypass):
    config = launch_ok(verl_log_dir=str(tmp_path / "logs"), verl_workdir=str(tmp_path))
    bypass(config)
    (tmp_path / "evil.sh").write_text(TOUCH + "\n")
    _proc, pwned, _argv, _ray = _execute(tmp_path, config)
    assert pwned


def test_every_variable_the_scripts_set_is_reserved():
    """verl_extra_env may not replace what start_verl.sh or run_training.sh set themselves."""
    from ansible_collections.verl.deploy.plugins.module_utils._features import FEATURES
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import SCRIPT_VARIABLES

    texts = {name: (REPO / "roles/training/templates" / name).read_text() for name in ("start_verl.sh.j2", "run_training.sh.j2")}
    assigned = {name for text in texts.values() for name in re.findall(r"^\s*(?:export\s+)?([A-Z][A-Z0-9_]*)=", text, re.M)}
    exported = {name for text in texts.values() for name in re.findall(r"^\s*export\s+([A-Z][A-Z0-9_]*)=", text, re.M)}
    # run_training.sh's own plain variables are set after start_verl.sh's exports, so an exported copy cannot change
    # them; the feature table's switches are among them. Every exported one must be reserved (SCRIPT_VARIABLES lists
    # some plain ones too, where they carry paths).
    plain = set(re.findall(r"^\s*([A-Z][A-Z0-9_]*)=", texts["run_training.sh.j2"], re.M)) - exported
    feature_switches = {name for feature in FEATURES for name in feature["variables"]}
    runtime = {"RAY_DEDUP_LOGS", "HYDRA_FULL_ERROR", "TASK_QUEUE_ENABLE", "HCCL_ASYNC_ERROR_HANDLING", "HCCL_EXEC_TIMEOUT",
               "HCCL_CONNECT_TIMEOUT", "VLLM_ASCEND_ENABLE_NZ", "CUDA_DEVICE_MAX_CONNECTIONS"}
    missing = {n for n in assigned - feature_switches - runtime - plain if n not in SCRIPT_VARIABLES}
    assert not missing, missing


# --- End to end: a few cases through the playbooks (slow: one ansible-playbook each).
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))
PATHS = {"verl_model_path": "/models/Qwen3-8B", "verl_train_file": "/data/train.parquet", "verl_test_file": "/data/test.parquet",
         "verl_ckpts_dir": "/ckpt"}


def _playbook(tmp_path, name, inventory, extra, verbosity=0):
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "extra.yml").write_text(extra if isinstance(extra, str) else yaml.safe_dump(extra))
    cmd = [ANSIBLE_PLAYBOOK, "playbooks/%s" % name, "-i", str(tmp_path / "hosts.yml"), "-e", "@%s" % (tmp_path / "extra.yml")]
    cmd += ["-" + "v" * verbosity] if verbosity else []
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", VERL_PWNED=str(tmp_path / "PWNED"))
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc, time.monotonic() - started


def _inventory(head, workers=(), **host_vars):
    hosts = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **host_vars}
    return {"ray_cluster": {"children": {
        "ray_head": {"hosts": {head: dict(hosts, ansible_host="127.0.0.1")}},
        "ray_workers": {"hosts": {w: dict(hosts, ansible_host="127.0.0.%d" % (i + 2)) for i, w in enumerate(workers)}},
    }}}


def _refusals(stdout):
    """The lines of preflight's "need fixing" list (one per refusal, each "- <hosts>: <message>")."""
    block = stdout[stdout.find("setting(s) need fixing;"):].split("TASK [", 1)[0]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("- ")]


# One render.yml run over an inventory holding every hostile name as a worker: each is refused by name on its own line
# (the host-name rule is per host), nothing is written, no payload runs.
HOSTILE_HOST_NAMES = ["n1\n" + TOUCH, "..", "../../escape", "w$(%s)" % TOUCH]


def test_render_playbook_refuses_hostile_host_names_and_writes_nothing(tmp_path):
    from ansible_collections.verl.deploy.plugins.module_utils._inputs import show

    out = tmp_path / "out"
    proc, _elapsed = _playbook(tmp_path, "render.yml", _inventory("head1", HOSTILE_HOST_NAMES), dict(PATHS, verl_output_dir=str(out)))
    assert proc.returncode != 0
    refusals = _refusals(proc.stdout)
    for bad_host in HOSTILE_HOST_NAMES:
        named = "The inventory host name %s (the host being checked) is not usable" % show(bad_host)
        assert sum(named in line for line in refusals) == 1, (bad_host, refusals)
    assert not out.exists() and not (tmp_path / "escape").exists() and not (tmp_path / "PWNED").exists()


def test_render_playbook_refuses_an_alias_bomb_in_about_a_second(tmp_path):
    out = tmp_path / "out"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
    for prev, name in zip("abcdef", "bcdefg"):
        bomb += "%s: &%s [%s]\n" % (name, name, ", ".join(["*" + prev] * 9))
    bomb += "verl_extra_overrides: [%s]\n" % ", ".join(["*g"] * 9)
    bomb += yaml.safe_dump(dict(PATHS, verl_output_dir=str(out)))
    proc, elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), bomb)
    assert proc.returncode != 0 and "verl_extra_overrides" in proc.stdout
    assert len(proc.stdout) + len(proc.stderr) < 20000
    # ansible-playbook itself needs a few seconds to start on a busy machine; the check is the rest.
    assert elapsed < 30
    assert not out.exists()


def test_render_playbook_refuses_a_key_lookalike_without_showing_it(tmp_path):
    out = tmp_path / "out"
    extra = dict(PATHS, verl_output_dir=str(out), verl_swanlab_apikey=SECRET_KEY)
    proc, _elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), extra, verbosity=3)
    assert proc.returncode != 0 and "verl_swanlab_apikey" in proc.stdout
    assert SECRET_KEY not in proc.stdout + proc.stderr
    assert not out.exists()


def test_render_playbook_refuses_an_output_folder_that_links_into_etc(tmp_path):
    link = tmp_path / "scripts"
    link.symlink_to("/etc")
    proc, _elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), dict(PATHS, verl_output_dir=str(link)))
    assert proc.returncode != 0 and "verl_output_dir" in proc.stdout
    assert not Path("/etc/head1").exists()


def test_render_playbook_refuses_a_host_folder_that_is_a_link(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "head1").symlink_to(elsewhere)
    proc, _elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), dict(PATHS, verl_output_dir=str(out)))
    assert proc.returncode != 0 and "symbolic link" in proc.stdout
    assert not list(elsewhere.iterdir())


def test_deploy_playbook_refuses_a_hostile_host_name_before_any_host_changes(tmp_path):
    """deploy.yml reads the hosts first (read-only pre-check), then stops at the settings check."""
    bad = "w$(%s)" % TOUCH
    extra = dict(PATHS, verl_confirm=True, verl_output_dir=str(tmp_path / "out"), verl_host_stage_dir=str(tmp_path / "stage"))
    proc, _elapsed = _playbook(tmp_path, "deploy.yml", _inventory("head1", [bad]), extra)
    assert proc.returncode != 0
    assert "is not usable" in proc.stdout
    recap = proc.stdout.split("PLAY RECAP")[-1]
    assert "changed=0" in recap and "changed=1" not in recap
    assert not (tmp_path / "stage").exists() and not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("shape", ["two-heads", "no-head"])
def test_render_playbook_refuses_an_inventory_without_exactly_one_head(tmp_path, shape):
    out = tmp_path / "out"
    inventory = _inventory("head1", ["worker1"])
    heads = inventory["ray_cluster"]["children"]["ray_head"]["hosts"]
    if shape == "two-heads":
        heads["head2"] = dict(heads["head1"])
    else:
        inventory["ray_cluster"]["children"]["ray_head"]["hosts"] = {}
    proc, _elapsed = _playbook(tmp_path, "render.yml", inventory, dict(PATHS, verl_output_dir=str(out)))
    assert proc.returncode != 0 and ("ray_head must hold exactly one host" in proc.stdout or "no hosts matched" in proc.stdout.lower())
    assert not out.exists()


def test_render_playbook_refuses_an_alias_bomb_in_any_passed_variable(tmp_path):
    """The mask and a verl_* setting each given a bomb, in one run: both refused on lines of their own (the mask as the
    setting it stands for, verl_feature_mask), the output short."""
    out = tmp_path / "out"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
    for prev, name in zip("abcdef", "bcdefg"):
        bomb += "%s: &%s [%s]\n" % (name, name, ", ".join(["*" + prev] * 9))
    for variable in ("mask", "verl_node_ip"):
        bomb += "%s: [%s]\n" % (variable, ", ".join(["*g"] * 9))
    bomb += yaml.safe_dump(dict(PATHS, verl_output_dir=str(out)))
    proc, elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), bomb)
    assert proc.returncode != 0
    refusals = _refusals(proc.stdout)
    for named in ("verl_feature_mask", "verl_node_ip"):
        assert ("- head1: %s is nested more than 4 levels deep, too large to be a setting. Fix: give a plain value." % named) in refusals, \
            (named, refusals)
    assert len(proc.stdout) + len(proc.stderr) < 20000 and elapsed < 30
    assert not out.exists()


# Round 3 through render.yml, in one run: each refused in stage 0 on a line of its own (the key by reference, a resolver
# in an override, //etc, PYTHONPATH), nothing written, the key nowhere in the output (-vvv).
ROUND_3 = {"verl_experiment_name": "{{ verl_swanlab_api_key }}", "verl_extra_overrides": ["trainer.x=${oc.env:SWANLAB_API_KEY}"],
           "verl_log_dir": "//etc", "verl_extra_env": {"PYTHONPATH": "/tmp/evil"}}


def test_render_playbook_refuses_round_3_inputs_in_stage_0(tmp_path):
    out = tmp_path / "out"
    extra = dict(PATHS, verl_output_dir=str(out), verl_swanlab_api_key=SECRET_KEY, **ROUND_3)
    proc, _elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), extra, verbosity=3)
    assert proc.returncode != 0, proc.stdout[-3000:]
    refusals = _refusals(proc.stdout)
    assert proc.stdout.count("%d setting(s) need fixing; no node was contacted" % len(ROUND_3)) == 1, proc.stdout[-3000:]
    for variable in ROUND_3:
        assert [line for line in refusals if re.match(r"- head1: %s\b" % variable, line)], (variable, refusals)
    assert SECRET_KEY not in proc.stdout + proc.stderr
    assert not out.exists() and not (tmp_path / "PWNED").exists()


# Internals are not inputs (round 3): the scripts take nothing from a variable a user can set but the validated
# configuration; ansible_managed and the training role's variables given with a payload do not reach them.
def test_variables_a_user_can_set_do_not_reach_the_scripts():
    from helpers.launch_helpers import TEMPLATES_RENDERED  # verl_control.sh is a plain file: no variable reaches it

    config = launch_ok()
    hostile = {"ansible_managed": "x\n" + TOUCH, "_training_module": "os; " + TOUCH, "_training_log_prefix": "$(%s)" % TOUCH,
               "_training_config_name": "x; " + TOUCH, "_training_pattern": "x'; " + TOUCH}
    for name in TEMPLATES_RENDERED:
        assert render(config, name, **hostile) == render(config, name), name
        assert TOUCH not in render(config, name, **hostile)


INTERNAL_NAMES = ["_verl_launch", "_training_module", "_training_log_prefix", "__verl_detected", "_precheck_x", "__training_files"]


def test_render_playbook_refuses_extra_vars_named_like_internals(tmp_path):
    """All of them given in one run: each refused on a line of its own (the rule is per name), nothing written."""
    out = tmp_path / "out"
    given = dict(PATHS, verl_output_dir=str(out), **{name: "x" for name in INTERNAL_NAMES})
    proc, _elapsed = _playbook(tmp_path, "render.yml", _inventory("head1"), given)
    assert proc.returncode != 0 and "%d variable(s) must go" % len(INTERNAL_NAMES) in proc.stdout, proc.stdout[-3000:]
    for name in INTERNAL_NAMES:
        assert sum(line.startswith(name + " (given in the inventory or with -e") and "named like the collection's internal variables" in line
                   for line in proc.stdout.splitlines()) == 1, name
    assert not out.exists()


def test_render_playbook_keeps_a_hostile_ansible_managed_out_of_the_scripts(tmp_path):
    out = tmp_path / "out"
    inventory = _inventory("head1", ansible_managed="x\n" + TOUCH)
    proc, _elapsed = _playbook(tmp_path, "render.yml", inventory, dict(PATHS, verl_output_dir=str(out)))
    assert proc.returncode == 0, proc.stdout[-3000:]
    for script in ("start_verl.sh", "run_training.sh"):
        text = (out / "head1" / script).read_text()
        assert TOUCH not in text and text.splitlines()[1].startswith("# Generated by verl.deploy")


def test_a_report_escapes_control_and_format_characters():
    from ansible_collections.verl.deploy.plugins.module_utils._inputs import show

    assert show("a\nb") == "'a\\nb'" and show("x\x1b[31m") == "'x\\x1b[31m'" and show("a\u202eb") == "'aU+202Eb'"
    _config, errors, _warnings = launch(host="n1\u202e\x1b[2J", head={"name": "n1\u202e\x1b[2J", "ansible_host": "10.0.0.1"})
    assert any("U+202E" in e["msg"] and "\\x1b" in e["msg"] for e in errors), errors


@pytest.mark.parametrize(("value", "expected"), [(" true ", True), ("TRUE", True), ("yes", True), (True, True), ("1", True),
                                                 (" false ", False), ("no", False), ("", False), (False, False), ("maybe", False)])
def test_booleans_are_read_by_one_function(value, expected):
    """The tasks read verl_confirm with the filter that calls the settings check's own to_bool."""
    from ansible_collections.verl.deploy.plugins.filter.setting_bool import setting_bool
    from ansible_collections.verl.deploy.plugins.module_utils._inputs import Errors, to_bool

    assert setting_bool(value) is expected
    assert bool(to_bool("verl_confirm", value, Errors())) is expected


def test_no_task_reads_a_setting_with_jinjas_own_bool():
    tasks = [*REPO.glob("roles/*/tasks/*.yml"), *REPO.glob("playbooks/*.yml")]
    found = [str(p.relative_to(REPO)) for p in tasks if re.search(r"\bverl_[a-z_]+\s*\|\s*bool\b", p.read_text())]
    assert not found, found


def test_render_playbook_refuses_an_inventory_source_it_cannot_parse(tmp_path):
    """A worker file with a YAML error is an error naming it, never a smaller cluster (any_unparsed_is_failed)."""
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "hosts.yml").write_text(yaml.safe_dump(_inventory("head1")))
    (inventory / "workers.yml").write_text("ray_cluster:\n  children:\n    ray_workers:\n      hosts:\n        worker1: {ansible_host: x\n")
    out = tmp_path / "out"
    (tmp_path / "extra.yml").write_text(yaml.safe_dump(dict(PATHS, verl_output_dir=str(out))))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "playbooks/render.yml", "-i", str(inventory), "-e", "@%s" % (tmp_path / "extra.yml")], cwd=REPO,
                          env=dict(os.environ, ANSIBLE_NOCOLOR="1"), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0 and "workers.yml" in proc.stdout + proc.stderr
    assert not out.exists()


# The fix a legacy-address refusal offers, applied: the dotted-decimal address it names is accepted, wherever the
# address came from; names that start with a digit or end in a number-only label stay names.
@pytest.mark.parametrize("bad", [bad for bad in LEGACY_ADDRESSES if bad not in ("999.1.1.1", "1.2.3.4.5")])
@pytest.mark.parametrize("where", ["verl_master_addr", "verl_node_ip", "ansible_host", "head node_ip"])
def test_a_legacy_address_refusal_names_the_dotted_decimal_fix_which_passes(bad, where):
    def given(value):
        if where in ("verl_master_addr", "verl_node_ip"):
            return {where: value}
        return {"head": {"name": "node1", "ansible_host": "10.0.0.1", "node_ip" if where == "head node_ip" else "ansible_host": value}}

    _config, errors, _warnings = launch(**given(bad))
    assert len(errors) == 1, errors
    msg = errors[0]["msg"]
    assert repr(bad) in msg and "dotted decimal" in msg
    fixed = re.search(r"(?:=|\()(\d+\.\d+\.\d+\.\d+)\)?\.$", msg).group(1)
    config = launch_ok(**given(fixed))
    assert config["master_addr"] == fixed or config["node_ip"] == fixed


@pytest.mark.parametrize("name", ["3com.example", "node-1.10", "0xdead.example", "head.example"])
def test_names_that_start_with_a_digit_stay_names(name):
    assert launch_ok(verl_master_addr=name)["master_addr"] == name


# Hydra composition against verl 0.7.0's own config tree: a `_target_` in an override's value reaches the composed
# config and is called when it is instantiated (positive control), so the check must refuse it; every override the
# check accepts composes to a config whose `_target_`s are exactly verl's own.
def _targets(node, found=None):
    found = set() if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "_target_":
                found.add(value)
            _targets(value, found)
    elif isinstance(node, list):
        for item in node:
            _targets(item, found)
    return found


def test_a_target_in_an_override_value_would_be_called_and_is_refused():
    import hydra.utils

    from helpers.hydra_schema import compose

    hostile = "+actor_rollout_ref.actor.probe={_target_:os.getpid}"
    cfg = compose([hostile])  # resolved, as a plain dict
    assert hydra.utils.instantiate(cfg["actor_rollout_ref"]["actor"]["probe"]) == os.getpid()
    assert "os.getpid" in _targets(cfg)
    config, errors, _warnings = launch(verl_extra_overrides=[hostile])
    assert config is None and "_target_" in errors[0]["msg"]


@pytest.mark.parametrize("line", [line for line in HYDRA_CASE_VARIANTS if "@" not in line])
def test_hydra_in_other_letters_is_refused_as_hydra_reacts_and_leaving_it_out_passes(line):
    """What hydra-core 1.3.2 does with the line, composed against verl's config: without `+` it refuses the line as
    the refusal quotes; with `+` it adds a key of that name to verl's config and Hydra's own settings are untouched."""
    from helpers.hydra_schema import ComposeError, compose

    config, errors, _warnings = launch(verl_extra_overrides=["trainer.critic_warmup=0", line])
    assert config is None and len(errors) == 1 and "is not Hydra's own settings" in errors[0]["msg"], errors
    quoted = errors[0]["msg"].split("(Could not ", 1)
    if len(quoted) == 2:
        with pytest.raises(ComposeError) as refused:
            compose([line], full=True)
        assert ("Could not " + quoted[1].split(".)", 1)[0]) in str(refused.value)
    else:
        cfg = compose([line], full=True)
        assert line.lstrip("+").split(".", 1)[0] in cfg and "hydra" not in cfg
    # The fix: leave it out.
    assert launch_ok(verl_extra_overrides=["trainer.critic_warmup=0"])["extra_overrides"] == ["trainer.critic_warmup=0"]


def test_accepted_overrides_compose_with_verls_own_targets_only():
    from helpers.hydra_schema import compose

    base = _targets(compose([]))
    accepted = ["+trainer.note='$(touch x)'", "trainer.critic_warmup=0", "+actor_rollout_ref.actor.megatron.param_dtype=bf16",
                "data.filter_overlong_prompts=True", "+trainer.a_list=[1,{b:c}]"]
    config = launch_ok(verl_extra_overrides=accepted)
    composed = compose(config["extra_overrides"])
    assert _targets(composed) == base and all(not t.startswith(("os.", "subprocess")) for t in base)
