"""The pre-check's rules (plugins/module_utils/_precheck.py), each on what node_facts would read: real npu-smi
captures, their pids mapped to containers as the host's /proc shows them."""
from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

import pytest

from ansible_collections.verl.deploy.plugins.filter.precheck_report import FilterModule
from ansible_collections.verl.deploy.plugins.module_utils import _precheck as pc
from ansible_collections.verl.deploy.plugins.module_utils import _versions
from ansible_collections.verl.deploy.plugins.module_utils._node_facts import annotate_processes, path_state
from ansible_collections.verl.deploy.plugins.module_utils._npu_smi import parse_info
from ansible_collections.verl.deploy.plugins.module_utils import _model
from helpers.launch_helpers import launch_ok

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "sim"))
import model_files  # noqa: E402  (the simulated cluster's model folders)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "npu-smi"
OWN, OTHER = "a" * 64, "b" * 64
LAUNCH = {"container_name": "verl", "master_addr": "10.0.0.1", "is_head": True, "npu_devices": list(range(8)),
          "npu_devices_csv": "0,1,2,3,4,5,6,7", "ray_port": 6379, "dashboard_port": 8265, "socket_ifname": "",
          "container": {"devices": ["/dev/davinci%d" % d for d in range(8)] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]}}
DOCKER = {"can_talk_to_docker": True, "containers": [
    {"Id": OWN, "Names": ["/verl"], "State": "running", "HostConfig": {"Devices": [], "Privileged": False}},
    {"Id": OTHER, "Names": ["/vllm-serve"], "State": "exited", "HostConfig": {"Devices": [], "Privileged": False}}]}


def npu(capture, owners):
    """The capture parsed, each pid annotated as /proc would show it: owners {pid: container id, None (host) or 'gone'}."""
    facts = parse_info((FIXTURES / capture).read_text())
    files = {}
    for pid, owner in owners.items():
        if owner != "gone":
            files["/proc/%d/cgroup" % pid] = "12:pids:/docker/%s\n" % owner if owner else "0::/user.slice\n"
            files["/proc/%d/comm" % pid] = "ray::WorkerDict\n" if owner == OWN else "python3\n"
    facts["processes"] = annotate_processes(facts["processes"], files.get, "0::/\n")
    facts["failed"] = False
    return facts


def checked(npu_facts, **changes):
    base = {"launch": copy.deepcopy(LAUNCH), "npu": npu_facts, "docker": copy.deepcopy(DOCKER),
            "container": {"exists": True, "container": {"Id": OWN, "State": {"Running": True}}},
            "facts": {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {"size_kb": 2 ** 22}},
            "paths": {"checks": [], "state": {}}, "route": {"ok": True}}
    base.update(changes)
    return base


HUNG = "cannot read the Docker engine at unix:///var/run/docker.sock: timed out"
BUSY = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"  # pids on NPUs 0, 1, 4, 5, 6, 7
PIDS = (1271095, 1271097, 1976542, 1976544, 1976548, 1976558)


def test_the_deploys_own_training_holding_its_npus_is_no_problem():
    """A re-run while the training runs: npu-smi lists the training's own workers on every NPU."""
    report = pc.report(checked(npu(BUSY, dict.fromkeys(PIDS, OWN))))
    assert report["problems"] == []
    assert report["training_npus"] == {"devices": [0, 1, 4, 5, 6, 7], "pids": sorted(PIDS)}


def test_another_containers_process_is_refused_by_pid_name_and_container():
    owners = dict.fromkeys(PIDS, OWN)
    owners[1976542] = OTHER
    text = pc.npus_missing_unhealthy_or_held(checked(npu(BUSY, owners)))
    assert text.startswith("NPU(s) 4 already run processes of something other than this deployment's container verl: "
                           "pid 1976542 (python3, container vllm-serve %s)." % OTHER[:12]), text
    assert "Fix: give verl_npu_devices for this host that lists only free, healthy NPUs, or stop what uses them." in text


def test_a_host_process_and_a_pid_the_host_does_not_show_are_refused():
    owners = dict.fromkeys(PIDS, OWN)
    owners.update({1271095: None, 1271097: "gone"})
    text = pc.npus_missing_unhealthy_or_held(checked(npu(BUSY, owners)))
    assert "NPU(s) 0, 1 already run processes" in text
    assert "pid 1271095 (python3, on the host, in no container)" in text
    assert "pid 1271097 (no name, a pid this host does not show)" in text


def test_no_training_container_means_every_holder_is_foreign():
    """The first deploy: npu-smi's processes (the capture's vLLM and MindIE workers) are someone else's."""
    facts = npu("011_info_910B2_8cards_v24.1.0_procs_mindie.txt", {})
    text = pc.npus_missing_unhealthy_or_held(checked(facts, container={"exists": False, "container": None}))
    assert text.startswith("NPU(s) 0, 1, 2, 3, 4, 5, 6, 7 already run processes") and "412122" in text, text


def test_processes_on_npus_the_deploy_does_not_use_are_not_its_business():
    launch = dict(LAUNCH, npu_devices=[2, 3], npu_devices_csv="2,3")
    assert pc.npus_missing_unhealthy_or_held(checked(npu(BUSY, dict.fromkeys(PIDS, OTHER)), launch=launch)) == ""


def test_a3_chips_are_matched_by_phy_id():
    facts = npu("005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt", {})
    pids = {p["pid"] for p in facts["processes"]}
    facts = npu("005_info_A3_Ascend910_16chips_v25.2.0_busy_procs_emptyname.txt", dict.fromkeys(pids, OWN))
    launch = dict(LAUNCH, npu_devices=list(range(16)), npu_devices_csv=",".join(map(str, range(16))))
    report = pc.report(checked(facts, launch=launch))
    assert report["problems"] == [] and report["training_npus"]["devices"] == sorted(report["training_npus"]["devices"])


@pytest.mark.parametrize("rule, change, words", [
    (pc.npu_smi_failed, {"npu": {"failed": True, "msg": "dcmi module initialize failed. ret is -8005"}},
     "npu-smi failed: dcmi module initialize failed. ret is -8005 Fix: check the Ascend driver"),
    (pc.docker_unanswered, {"docker": {"can_talk_to_docker": False, "msg": "no socket"}}, "the Docker engine does not answer (no socket)"),
    (pc.docker_unanswered, {"docker": {"can_talk_to_docker": False, "msg": HUNG}}, "the Docker engine hangs: restart it"),
    (pc.no_route_to_the_head, {"route": {"ok": False, "msg": ""}}, "no route to the head 10.0.0.1 (verl_master_addr): no matching route"),
    (pc.socket_ifname_unknown, {"launch": dict(LAUNCH, socket_ifname="ib9")}, "verl_socket_ifname=ib9 is not an interface of this host (eth0)"),
    (pc.ray_ports_taken, {"container": {"exists": False}, "facts": {"listening_ports": [6379]}}, "port(s) 6379 on 10.0.0.1 are in use"),
    (pc.paths_missing, {"paths": {"checks": [{"variable": "verl_model_path", "path": "/m", "kind": "directory"}],
                                  "state": {"/m": {"exists": True, "isdir": False, "isreg": True}}}},
     "verl_model_path=/m is not an existing directory on this host."),
    (pc.small_shm, {"facts": {"shm": {"size_kb": 65536}}}, "/dev/shm has only 64 MiB"),
    (pc.devices_open_outside, {"facts": {"device_holders": [{"device": "/dev/davinci0", "pid": 77, "name": "python3", "container_id": None}]}},
     "/dev/davinci0 is open in pid 77 (python3, on the host); the training may fail with dcmi error -8020."),
])
def test_each_rule_names_what_is_wrong_and_is_silent_when_it_is_fine(rule, change, words):
    fine = checked(npu(BUSY, dict.fromkeys(PIDS, OWN)))
    assert rule(fine) == ""
    assert words in rule(dict(fine, **change))


def test_a_container_given_the_npus_is_refused_but_the_training_container_is_not():
    docker = copy.deepcopy(DOCKER)
    docker["containers"][1].update(State="running", HostConfig={"Devices": [{"PathOnHost": "/dev/davinci3"}], "Privileged": False})
    text = pc.containers_holding_the_npus(checked(npu(BUSY, {}), docker=docker))
    assert text.startswith("container vllm-serve was given /dev/davinci3 (--device): NPU(s) 3 of this deploy are taken"), text
    assert "Fix: stop what holds them (docker stop vllm-serve), or leave NPU(s) 3 out of verl_npu_devices for this host." in text
    assert pc.containers_holding_the_npus(checked(npu(BUSY, {}))) == ""


def test_the_filter_is_the_report():
    assert FilterModule().filters()["precheck_report"](checked(npu(BUSY, dict.fromkeys(PIDS, OWN))))["problems"] == []
    assert FilterModule().filters()["precheck_report"](None)["problems"]  # nothing read: npu-smi, Docker and the route are named


def test_the_status_line_says_what_holds_the_npus():
    assert pc.npu_usage(npu(BUSY, dict.fromkeys(PIDS, OWN)), OWN) == "0-1,4-7 by the training (pids %s)" % ", ".join(map(str, sorted(PIDS)))
    owners = dict.fromkeys(PIDS, OWN)
    owners[1976558] = OTHER
    assert pc.npu_usage(npu(BUSY, owners), OWN, DOCKER["containers"]).endswith(
        "; 7 by pid 1976558 (python3, container vllm-serve %s)" % OTHER[:12])
    assert pc.npu_usage(npu("001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt", {}), OWN) == "none"
    assert pc.npu_usage({"failed": True}, OWN) == "?"


def test_hccls_ports_taken_where_the_training_does_not_run_are_refused():
    idle = npu("001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt", {})
    facts = {"listening_ports": [22, 60003, 60031, 60032], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {}}
    text = pc.hccl_ports_taken(checked(idle, facts=facts))
    assert text.startswith("port(s) 60003, 60031 of HCCL's range 60000-60031 (HCCL_IF_BASE_PORT=60000) are in use on this host"), text
    assert "HCCL_IF_BASE_PORT: 60033} (its 32 ports are free here)" in text
    moved = dict(LAUNCH, extra_env={"HCCL_IF_BASE_PORT": "60033"})  # the base the fix names
    assert pc.hccl_ports_taken(checked(idle, facts=facts, launch=moved)) == ""
    # The training's own HCCL holds them on a re-run.
    assert pc.hccl_ports_taken(checked(npu(BUSY, dict.fromkeys(PIDS, OWN)), facts=facts)) == ""


@pytest.mark.parametrize("value, ports", [
    ("60000-60003", [60000, 60001, 60002, 60003]), ("60000,60050-60051", [60000, 60050, 60051]), ("56000, 56005", [56000, 56005]),
    ("auto", "auto"), ("AUTO", "auto"), ("60050-60000", None), ("60000-", None), ("0-10", None), ("70000", None), ("", None),
])
def test_hccl_host_socket_port_range_in_canns_forms(value, ports):
    """CANN's reference, HCCL_HOST_SOCKET_PORT_RANGE: a port, a range, both separated by commas, or "auto"."""
    assert pc.hccl_port_spec(value) == ports


def test_hccls_host_socket_range_taken_is_refused_naming_the_holder_and_a_free_range():
    """verl's NPU scripts set HCCL_HOST_SOCKET_PORT_RANGE=60000-60050, which takes precedence over HCCL_IF_BASE_PORT. The
    failure it prevents (vllm-ascend #405): "EJ0003: ... Failed to bind the IP port. Reason: The IP address and port have
    been bound already." then "host nic listen start failed, port[60000], return[11]"."""
    idle = npu("001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt", {})
    facts = {"listening_ports": [22, 60003, 60049], "port_holders": {"60003": ["4242 (python3)"]},
             "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {}}
    launch = dict(LAUNCH, extra_env={"HCCL_HOST_SOCKET_PORT_RANGE": "60000-60050"})
    text = pc.hccl_ports_taken(checked(idle, facts=facts, launch=launch))
    assert text.startswith("port(s) 60003, 60049 of HCCL's host ports (HCCL_HOST_SOCKET_PORT_RANGE=60000-60050) are in use on "
                           "this host (60003 by pid 4242 (python3))"), text
    assert 'verl_extra_env: {HCCL_HOST_SOCKET_PORT_RANGE: "60050-60100"} (its 51 ports are free here)' in text, text
    for fixed in ("60050-60100", "auto"):  # the range the fix names, or the OS's choice
        launch = dict(LAUNCH, extra_env={"HCCL_HOST_SOCKET_PORT_RANGE": fixed})
        assert pc.hccl_ports_taken(checked(idle, facts=facts, launch=launch)) == "", fixed
    # The range set, HCCL_IF_BASE_PORT's default range is not HCCL's: 60003 taken there is no refusal of its own.
    assert "HCCL_IF_BASE_PORT" not in text
    # No holder seen (another user's process, without root): the ports are still named.
    text = pc.hccl_ports_taken(checked(idle, facts=dict(facts, port_holders={}), launch=dict(
        LAUNCH, extra_env={"HCCL_HOST_SOCKET_PORT_RANGE": "60000,60049"})))
    assert "port(s) 60049 of HCCL's host ports (HCCL_HOST_SOCKET_PORT_RANGE=60000,60049) are in use on this host, and" in text, text


@pytest.mark.parametrize("hccn, words", [
    ({"3": {"link": "DOWN", "health": "Success"}}, "NPU 3 link DOWN (hccn_tool -i 3 -link -g)"),
    ({"5": {"link": "UP", "health": "Receive timeout"}}, "NPU 5 net health Receive timeout (hccn_tool -i 5 -net_health -g)"),
    ({"2": {"link": None, "health": None, "error": "`hccn_tool -i 2 -link -g` exited 1: device 2 not found"}},
     "NPU 2 link unknown: `hccn_tool -i 2 -link -g` exited 1"),
    # A call that hung (twice, on a loaded host or a stuck driver) is named once; the NPUs after it were not asked.
    ({"5": {"link": "UP", "health": None, "error": "`hccn_tool -i 5 -net_health -g` did not answer within 30 s, asked twice"},
      "6": {"link": None, "health": None, "not_asked": True}, "7": {"link": None, "health": None, "not_asked": True}},
     "NPU 5 net health unknown: `hccn_tool -i 5 -net_health -g` did not answer within 30 s, asked twice (hccn_tool -i 5 -net_health -g); "
     "NPU(s) 6, 7 were not asked after that;"),
])
def test_an_npu_whose_own_network_is_not_up_is_refused_on_a_multi_node_run(hccn, words):
    devices = {str(d): {"link": "UP", "health": "Success"} for d in range(8)}
    devices.update(hccn)
    facts = {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {}, "hccn": {"devices": devices}}
    text = pc.npu_network_down(checked(npu(BUSY, {}), facts=facts, launch=dict(LAUNCH, nnodes=2)))
    assert words in text and "Fix: check the NPU ports' cables" in text, text
    assert pc.npu_network_down(checked(npu(BUSY, {}), facts=facts, launch=dict(LAUNCH, nnodes=1))) == "", "one node: HCCL stays inside it"


# --------------------------------------------------------------------------- host paths, resolved on the host

def _on_host(tmp_path, **launch):
    """What the pre-check reads of the launch's host paths, by node_facts' own path_state on this machine."""
    config = dict(LAUNCH, **launch)
    paths = [path for _variable, path in pc.host_paths(config)] + ([config["npu_smi_path"]] if config.get("npu_smi_path") else [])
    return checked(npu(BUSY, dict.fromkeys(PIDS, OWN)), launch=config, paths={"checks": [], "state": {p: path_state(p) for p in paths}})


@pytest.mark.parametrize("variable, setting, extra", [
    ("verl_log_dir", "log_dir", ""),
    ("verl_ckpts_dir", "ckpts_dir", "/qwen3"),
    ("verl_swanlab_log_dir", "swanlab_log_dir", "/"),
])
def test_a_mounted_folder_that_is_a_system_folder_through_a_link_is_refused(tmp_path, variable, setting, extra):
    """Round 3: the text passes every rule, the host's link makes it /etc (mounted read-write into the container)."""
    (tmp_path / "mnt").mkdir()
    (tmp_path / "mnt" / "logs").symlink_to("/etc")
    path = str(tmp_path / "mnt" / "logs") + extra
    problem = pc.host_paths_resolve_to_system_folders(_on_host(tmp_path, **{setting: path}))
    real = "/etc" + extra.rstrip("/")
    assert problem.startswith("%s=%s is %s on this host (through symbolic links): that is the root or a system folder (%s), which "
                              "must not be mounted into the container. Fix: give a folder of its own" % (variable, path, real, real)), problem
    assert problem.endswith(", or remove the link. Nothing was mounted or written.")


def test_the_stage_folder_and_extra_volumes_are_resolved_too(tmp_path):
    (tmp_path / "stage").symlink_to("/usr")
    (tmp_path / "data").symlink_to("/var/lib/docker")
    problem = pc.host_paths_resolve_to_system_folders(_on_host(tmp_path, host_stage_dir=str(tmp_path / "stage"), container_name="bin",
                                                               container_extra_volumes=[str(tmp_path / "data") + ":/data:ro"]))
    assert "verl_host_stage_dir=%s/stage/bin is /usr/bin on this host" % tmp_path in problem, problem
    assert "verl_container_extra_volumes=%s/data is /var/lib/docker on this host" % tmp_path in problem, problem


def test_a_link_to_a_folder_of_its_own_is_fine(tmp_path):
    (tmp_path / "real-logs").mkdir()
    (tmp_path / "logs").symlink_to(tmp_path / "real-logs")
    assert pc.host_paths_resolve_to_system_folders(_on_host(tmp_path, log_dir=str(tmp_path / "logs"))) == ""
    assert pc.host_paths_resolve_to_system_folders(_on_host(tmp_path)) == "", "no path read: nothing to judge"


@pytest.mark.parametrize("make, kind", [("folder", "a folder"), ("socket", "a socket"), ("link-to-folder", "a folder"), ("none", "missing")])
def test_verl_npu_smi_path_must_be_a_file_on_the_host(tmp_path, make, kind):
    import socket  # pylint: disable=import-outside-toplevel

    path = tmp_path / "npu-smi"
    server = None
    if make == "folder":
        path.mkdir()
    elif make == "link-to-folder":
        path.symlink_to(tmp_path)
    elif make == "socket":
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
    try:
        problem = pc.npu_smi_not_a_file(_on_host(tmp_path, npu_smi_path=str(path)))
    finally:
        if server:
            server.close()
    assert problem == ("verl_npu_smi_path=%s is %s on this host, not a file: it is bind-mounted into the container as the npu-smi "
                       "program. Fix: give the npu-smi executable itself (command -v npu-smi on the host, e.g. "
                       "/usr/local/sbin/npu-smi), or leave verl_npu_smi_path empty to find it." % (path, kind))


def test_an_npu_smi_file_is_fine(tmp_path):
    (tmp_path / "npu-smi").write_text("#!/bin/sh\n")
    assert pc.npu_smi_not_a_file(_on_host(tmp_path, npu_smi_path=str(tmp_path / "npu-smi"))) == ""
    assert pc.npu_smi_not_a_file(_on_host(tmp_path)) == "", "not stated: node_facts found an executable"


# --------------------------------------------------------------------------- the model and the memory

A2 = "007_info_910B3_8cards_v24.1.rc2_procs_emptyname_mixed.txt"  # 8 x 910B3, 65536 MB HBM each


def model_read(tmp_path, name="Qwen3-8B", damage=None):
    folder = model_files.write(str(tmp_path), name)
    if damage:
        damage(Path(folder))
    return _model.judge(_model.read_folder(folder))


def memory_checked(tmp_path, damage=None, config=None, **settings):
    """A host whose model folder is the simulated cluster's (damaged as asked), or with `config` a real-sized copy of that
    model (its weight files' headers: the memory rules count what is on the disk, and the stand-in shards are small)."""
    launch = launch_ok(**settings)
    read = _model.judge(model_files.real_read(config)) if config else model_read(tmp_path, damage=damage)
    facts = {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {"size_kb": 2 ** 22},
             "model": read}
    return checked(npu(A2, {}), launch=launch, facts=facts)


def test_the_default_layout_fits_an_a2_and_its_model_is_complete(tmp_path):
    report = pc.report(memory_checked(tmp_path, config=model_files.QWEN3_8B))
    assert not [p for p in report["problems"] if "model" in p or "Memory" in p], report
    assert not [w for w in report["warnings"] if "Memory" in w]


@pytest.mark.parametrize("damage, words", [
    (lambda f: (f / "model-00004-of-00005.safetensors").unlink(), "are missing: model-00004-of-00005.safetensors"),
    (lambda f: (f / "model-00002-of-00005.safetensors").write_bytes((f / "model-00002-of-00005.safetensors").read_bytes()[:-4]),
     "truncated shard(s) (an interrupted copy): model-00002-of-00005.safetensors has"),
    (lambda f: (f / "config.json").unlink(), "config.json does not exist or cannot be read"),
])
def test_an_incomplete_model_folder_is_refused_naming_the_file_and_the_fix(tmp_path, damage, words):
    problems = pc.report(memory_checked(tmp_path, damage))["problems"]
    assert any(words in p and "Fix:" in p for p in problems), problems


@pytest.mark.parametrize("settings, words", [
    # vLLM's share so large that the optimizer's moments no longer fit beside it from the second step on.
    ({"verl_gpu_memory_utilization": "0.95"}, "the second rollout fails with 'NPU out of memory'. Fix: any one of: turn on Offload"),
    # So small that the actor leaves vLLM no cache blocks: raising it is the fix, as vLLM's own message says.
    ({"verl_gpu_memory_utilization": "0.2"}, "'No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"),
])
def test_an_impossible_memory_layout_is_refused_before_anything_starts(tmp_path, settings, words):
    problems = pc.report(memory_checked(tmp_path, config=model_files.QWEN3_8B, **settings))["problems"]
    assert any(words in p for p in problems), problems


def test_without_the_model_or_the_hbm_nothing_is_estimated(tmp_path):
    case = memory_checked(tmp_path, config=model_files.QWEN3_8B, verl_gpu_memory_utilization="0.95")
    assert pc.memory_does_not_fit(dict(case, facts=dict(case["facts"], model={}))) == ""
    assert pc.memory_does_not_fit(dict(case, npu={"failed": True})) == ""
    assert pc.hbm_bytes(npu(A2, {})) == 65536 * 1024 * 1024


def _layers_28(folder):
    config = folder / "config.json"
    config.write_text(config.read_text().replace('"num_hidden_layers": 36', '"num_hidden_layers": 28'))


@pytest.mark.parametrize("is_head, damage, refused", [
    (False, _layers_28, True),   # a worker with another model: refused on the worker, naming it
    (False, None, False),        # the same model: fine
    (True, _layers_28, False),   # the head is the reference, never compared with itself
])
def test_a_worker_whose_model_is_not_the_heads_is_refused(tmp_path, is_head, damage, refused):
    case = memory_checked(tmp_path / "worker", damage, is_head=is_head)
    case.update(host="worker-1", head_host="head-1", model_head=model_read(tmp_path / "head"))
    problems = [p for p in pc.report(case)["problems"] if "not the same model" in p]
    if not refused:
        assert problems == []
        return
    assert len(problems) == 1
    assert "on worker-1 is not the same model as on the head head-1: config.json differs (num_hidden_layers 28 here, 36 on the head)" \
        in problems[0]
    assert "Fix: copy the head's folder to this node" in problems[0]


def test_a_worker_without_the_model_folder_is_left_to_the_paths_rule(tmp_path):
    case = memory_checked(tmp_path / "worker", is_head=False)
    case["facts"]["model"] = _model.judge(_model.read_folder(str(tmp_path / "nowhere")))
    case.update(host="worker-1", head_host="head-1", model_head=model_read(tmp_path / "head"))
    assert pc.model_not_the_heads(case) == ""


def test_a_moe_model_is_counted_with_every_expert_and_its_memory_fix_works(tmp_path):
    """Issue 28: Qwen3-30B-A3B was counted as 3.3e9 parameters (the dense formula), so no memory rule could fire. From its
    weight files' headers it is 30.5e9: vLLM's cache and the actor's update do not fit 8 x 64 GB at TP 4 x PP 2, and the
    fix the refusal names (Swap Optimizer), applied, passes."""
    case = memory_checked(tmp_path, config=model_files.QWEN3_30B_A3B)
    read = case["facts"]["model"]
    assert read["parameters_from"] == "weights" and read["parameters"] / 1e9 == pytest.approx(30.5, rel=0.01)
    assert read["active_parameters"] / 1e9 == pytest.approx(3.3, rel=0.03)
    problems = [p for p in pc.report(case)["problems"] if "Memory estimate" in p]
    assert len(problems) == 1 and "31 B parameters" in problems[0] and "Fix: any one of: turn on Swap Optimizer (bit 5)" in problems[0]
    fixed = memory_checked(tmp_path, config=model_files.QWEN3_30B_A3B, verl_feature_mask="0000010")
    assert not [p for p in pc.report(fixed)["problems"] if "Memory estimate" in p]


def test_expert_parallelism_splits_the_experts_in_the_estimate(tmp_path):
    one = pc.memory_case(memory_checked(tmp_path, config=model_files.QWEN3_30B_A3B, verl_train_tp=1, verl_gen_tp=1, verl_train_pp=8))
    eight = dict(one, ep=8)
    from ansible_collections.verl.deploy.plugins.module_utils import _memory_fit as fit

    assert fit.estimate(eight)["actor"]["parameters"] < fit.estimate(one)["actor"]["parameters"] / 4


def _hccn(addresses=None, tls=None, conf=None):
    """node_facts' hccn read of 8 NPUs: each UP and healthy, at 29.1.0.<N>, TLS off, unless given."""
    devices = {str(d): {"link": "UP", "health": "Success", "address": "29.1.0.%d" % d, "netmask": "255.255.0.0", "tls": "disabled"}
               for d in range(8)}
    for device, address in (addresses or {}).items():
        devices[str(device)]["address"] = address
    for device, state in (tls or {}).items():
        devices[str(device)]["tls"] = state
    return {"path": "/usr/local/Ascend/driver/tools/hccn_tool", "devices": devices, "conf": conf}


def test_an_npu_address_that_is_not_hccn_confs_is_refused_and_the_fix_makes_it_pass():
    """vllm-ascend's multi-node guide checks /etc/hccn.conf against hccn_tool -i N -ip -g; a stale address_N shows up as
    `HcclCommPrepare fail` or an HCCL socket timeout (EI0006) once the model has loaded."""
    conf = {str(d): "29.1.0.%d" % d for d in range(8)}
    conf["5"] = "29.1.7.5"
    facts = {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {}}
    case = checked(npu(BUSY, {}), facts=dict(facts, hccn=_hccn(conf=conf)), launch=dict(LAUNCH, nnodes=2))
    text = pc.npu_address_not_hccn_conf(case)
    assert "NPU 5 has 29.1.0.5 (hccn_tool -i 5 -ip -g), /etc/hccn.conf says address_5=29.1.7.5" in text, text
    assert "Fix: give each NPU the file's address (hccn_tool -i 5 -ip -s address 29.1.7.5 netmask 255.255.0.0)" in text, text
    # The fix applied on the device (its address is now the file's), or the device's address written into the file.
    fixed = dict(facts, hccn=_hccn(addresses={5: "29.1.7.5"}, conf=conf))
    assert pc.npu_address_not_hccn_conf(checked(npu(BUSY, {}), facts=fixed, launch=dict(LAUNCH, nnodes=2))) == ""
    fixed = dict(facts, hccn=_hccn(conf=dict(conf, **{"5": "29.1.0.5"})))
    assert pc.npu_address_not_hccn_conf(checked(npu(BUSY, {}), facts=fixed, launch=dict(LAUNCH, nnodes=2))) == ""
    # Only on evidence: no /etc/hccn.conf, a file that does not name the NPU, an address not read, one node, an NPU not used.
    for hccn, launch in ((_hccn(conf=None), dict(LAUNCH, nnodes=2)), (_hccn(conf={"0": "29.1.0.0"}), dict(LAUNCH, nnodes=2)),
                         (_hccn(addresses={5: None}, conf=conf), dict(LAUNCH, nnodes=2)), (_hccn(conf=conf), dict(LAUNCH, nnodes=1)),
                         (_hccn(conf=conf), dict(LAUNCH, nnodes=2, npu_devices=[0, 1, 2, 3]))):
        assert pc.npu_address_not_hccn_conf(checked(npu(BUSY, {}), facts=dict(facts, hccn=hccn), launch=launch)) == ""


def test_npus_tls_on_for_one_node_and_off_for_another_are_refused_on_the_head():
    """CANN's HCCL troubleshooting guide (EI0016): `[InitGroupStage][RanktableCheck] Value Disable for config "tls" is
    invalid. Expected Value:"All ranks are consistent. Current status : rankList for enabled tls:[...]; rankList for
    disabled tls:[...]"`."""
    nodes = {"head": _hccn(), "worker-1": _hccn(tls=dict.fromkeys(range(8), "enabled"))}
    used = {"head": list(range(8)), "worker-1": list(range(8))}
    launch = dict(LAUNCH, nnodes=2)
    text = pc.npu_tls_mixed(checked(npu(BUSY, {}), launch=launch, hccn_nodes=nodes, npu_devices_nodes=used))
    assert "on for worker-1 NPU(s) 0-7, off for head NPU(s) 0-7" in text, text
    assert "Fix: switch it the same on every NPU of the run" in text and "hccn_tool -i <id> -tls -s enable 0 on worker-1 NPU(s) 0-7" in text
    # The fix applied: the worker's switched off (or the head's on).
    for fixed in ({"head": _hccn(), "worker-1": _hccn()},
                  {"head": _hccn(tls=dict.fromkeys(range(8), "enabled")), "worker-1": nodes["worker-1"]}):
        assert pc.npu_tls_mixed(checked(npu(BUSY, {}), launch=launch, hccn_nodes=fixed, npu_devices_nodes=used)) == ""
    # An NPU the run does not use, or whose switch was not read, is not judged; a worker says nothing (the head does).
    half = {"head": _hccn(tls={7: "enabled"}), "worker-1": _hccn(tls={0: None})}
    assert pc.npu_tls_mixed(checked(npu(BUSY, {}), launch=launch, hccn_nodes=half,
                                    npu_devices_nodes={"head": list(range(7)), "worker-1": list(range(8))})) == ""
    assert pc.npu_tls_mixed(checked(npu(BUSY, {}), launch=dict(launch, is_head=False), hccn_nodes=nodes, npu_devices_nodes=used)) == ""
    assert pc.npu_tls_mixed(checked(npu(BUSY, {}), launch=dict(launch, nnodes=1), hccn_nodes=nodes, npu_devices_nodes=used)) == ""


def test_the_hccn_rules_judge_a_read_of_only_the_deploys_npus():
    """node_facts asks hccn_tool only about the deploy's NPUs (here 4-7 of 8): the link, the address against /etc/hccn.conf
    (which names every NPU) and the TLS switch across nodes are judged on those, and the NPUs not read are no problem."""
    launch = dict(LAUNCH, nnodes=2, npu_devices=[4, 5, 6, 7], npu_devices_csv="4,5,6,7")
    used = {"head": [4, 5, 6, 7], "worker-1": [4, 5, 6, 7]}

    def read(**changes):
        hccn = _hccn(conf={str(d): "29.1.0.%d" % d for d in range(8)}, **changes)
        hccn["devices"] = {d: entry for d, entry in hccn["devices"].items() if int(d) in used["head"]}
        return hccn

    def case(hccn, nodes=None):
        facts = {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {}, "hccn": hccn}
        return checked(npu(BUSY, {}), facts=facts, launch=launch, hccn_nodes=nodes or {"head": hccn, "worker-1": hccn},
                       npu_devices_nodes=used)

    good = case(read())
    assert (pc.npu_network_down(good), pc.npu_address_not_hccn_conf(good), pc.npu_tls_mixed(good)) == ("", "", "")
    down = read()
    down["devices"]["5"]["link"] = "DOWN"
    assert "NPU 5 link DOWN (hccn_tool -i 5 -link -g)" in pc.npu_network_down(case(down))
    assert "NPU 6 has 29.1.9.6 (hccn_tool -i 6 -ip -g), /etc/hccn.conf says address_6=29.1.0.6" in pc.npu_address_not_hccn_conf(
        case(read(addresses={6: "29.1.9.6"})))
    mixed = case(read(), nodes={"head": read(), "worker-1": read(tls=dict.fromkeys(range(4, 8), "enabled"))})
    assert "on for worker-1 NPU(s) 4-7, off for head NPU(s) 4-7" in pc.npu_tls_mixed(mixed)


GIB_KB = 1024 * 1024
IDLE_CAPTURE = "001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt"


def _memory_case(available_gib, **launch):
    facts = {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {},
             "memory": {"total_kb": 1024 * GIB_KB, "available_kb": int(available_gib * GIB_KB)}}
    return checked(npu(IDLE_CAPTURE, {}), facts=facts, launch=dict(LAUNCH, **launch))


def test_host_memory_below_what_the_workers_take_at_start_is_refused_and_fewer_npus_pass():
    """Ray kills workers above 95 % of the node's memory: "Task was killed due to the node running low on memory. Memory on
    the node ... was 246.41GB / 251.54GB (0.979583), which exceeds the memory usage threshold of 0.95" (verl #2950); each
    NPU worker holds 7.8-10.3 GB at its start on Ascend (verl-omni #402)."""
    text = pc.host_memory_short(_memory_case(30))
    assert text.startswith("this host has 30.0 GiB of memory available (MemAvailable) for its 8 NPU workers"), text
    assert "exceeds the memory usage threshold of 0.95" in text and "give verl_npu_devices at most 3 NPUs" in text, text
    # The fix: as many NPUs as the message names (or memory freed).
    assert pc.host_memory_short(_memory_case(30, npu_devices=[0, 1, 2])) == ""
    assert pc.host_memory_short(_memory_case(64)) == ""
    assert "fewer NPUs" in pc.host_memory_short(_memory_case(4))


@pytest.mark.parametrize("available_gib, problem, warning", [
    (1000, False, False), (88, False, False), (70, False, True), (64, False, True), (63.9, True, False),
])
def test_host_memory_is_refused_only_when_clearly_short(available_gib, problem, warning):
    """8 NPU workers: 8 x 8 GiB refused below, 8 x 11 GiB (10.27 GB / 0.95) a warning below; never both."""
    case = _memory_case(available_gib)
    assert bool(pc.host_memory_short(case)) is problem and bool(pc.host_memory_tight(case)) is warning


def test_host_memory_is_not_judged_while_the_training_runs_or_unread():
    """The training's workers hold the memory MemAvailable leaves out: a re-run is not refused for them."""
    facts = {"listening_ports": [], "network": {"interfaces": ["eth0"]}, "device_holders": [], "shm": {},
             "memory": {"total_kb": 64 * GIB_KB, "available_kb": 2 * GIB_KB}}
    assert pc.host_memory_short(checked(npu(BUSY, dict.fromkeys(PIDS, OWN)), facts=facts)) == ""
    assert pc.host_memory_short(checked(npu(IDLE_CAPTURE, {}), facts=dict(facts, memory={"available_kb": None}))) == ""


IMAGE = "quay.io/ascend/verl:verl-8.5.0-a3-ubuntu22.04-py3.11-v0.7.1"


def _pull_case(free_gib, here=(), elsewhere=18.5):
    docker = dict(DOCKER, images=list(here), root_dir="/var/lib/docker", root_free_bytes=int(free_gib * pc.GIB))
    nodes = {"head": [{"Id": "sha256:1", "RepoTags": [IMAGE], "Size": int(elsewhere * pc.GIB)}] if elsewhere else [],
             "worker-1": list(here)}
    return checked(npu(IDLE_CAPTURE, {}), docker=docker, launch=dict(LAUNCH, image=IMAGE), images_nodes=nodes)


def test_docker_space_short_of_the_image_a_node_must_pull_is_refused():
    """Docker's own failure: "failed to register layer: Error processing tar file(exit status 1): write ...: no space left
    on device" (moby #32811); the image's size is the one another node of the run holds it at."""
    text = pc.docker_root_short(_pull_case(10))
    assert text.startswith("the image %s is not on this host and must be pulled: it takes 18.5 GiB (on head), but Docker's "
                           "data root /var/lib/docker has 10.0 GiB free" % IMAGE), text
    assert "no space left on device" in text and "Fix: free space there (docker image prune -a" in text, text
    # The fix: the space freed (or the image loaded here).
    assert pc.docker_root_short(_pull_case(40)) == ""
    assert pc.docker_root_short(_pull_case(10, here=[{"Id": "sha256:1", "RepoTags": [IMAGE], "Size": 1}])) == ""


def _ray_case(free_gib, available_gib=1000, shm_free_gib=500, size_gib=None, elsewhere=None, volumes=(), ray_args=()):
    """A node whose container's /tmp (Ray's session files and spilling) is on Docker's data root."""
    case = _pull_case(free_gib, elsewhere=elsewhere)
    case["docker"]["root_size_bytes"] = int(size_gib * pc.GIB) if size_gib else None
    case["facts"] = dict(case["facts"], memory={"available_kb": int(available_gib * 2 ** 20)},
                         shm={"size_kb": int(shm_free_gib * 2 ** 20), "free_kb": int(shm_free_gib * 2 ** 20)})
    case["launch"] = dict(case["launch"], container={"volumes": list(volumes)}, ray_start_args=list(ray_args))
    return case


DEFAULT_STORE = "up to its object store (Ray's default from the memory available, "


@pytest.mark.parametrize("case, warned, words", [
    # 1000 GiB available: Ray's store is capped at 200 GB (186.3 GiB), and it may spill that much into /tmp.
    (_ray_case(100), True, "Ray's spilling to the container's /tmp/ray, " + DEFAULT_STORE + "186.3 GiB)"),
    (_ray_case(300), False, ""),
    # Ray's default store is at most 95 % of /dev/shm's free space: 64 GiB of /dev/shm keep it at 60.8 GiB.
    (_ray_case(100, shm_free_gib=64), False, ""),
    (_ray_case(50, shm_free_gib=64), True, DEFAULT_STORE + "60.8 GiB"),
    # The 5 % of the disk Ray keeps free ("is over 95% full ... Object creation will fail if spilling is required").
    (_ray_case(200, size_gib=1000), True, "the 5 % of the disk Ray keeps free 50.0 GiB"),
    # /dev/shm smaller than the store, which Ray's default keeps at 10 GB at least: the store itself is in /tmp as well.
    (_ray_case(15, available_gib=100, shm_free_gib=4), True, "Ray's object store in the container's /tmp (/dev/shm has 4.0 GiB free) 9.3 GiB"),
    # --object-store-memory in verl_ray_start_args is the store's size, small or large.
    (_ray_case(100, ray_args=["--num-cpus=16", "--object-store-memory=100000000"]), False, ""),
    (_ray_case(100, ray_args=["--object-store-memory=300000000000"]), True, "up to its object store (--object-store-memory, 279.4 GiB)"),
    (_ray_case(100, shm_free_gib=64, ray_args=["--object-store-memory=100000000000"]), True,
     "Ray's object store in the container's /tmp (/dev/shm has 64.0 GiB free) 93.1 GiB"),
    # The image to pull comes first; with it, Ray's room.
    (_ray_case(25, available_gib=40, elsewhere=18.5), True, "the image %s to pull (18.5 GiB on head) 18.5 GiB" % IMAGE),
    # The container's /tmp/ray mounted elsewhere: Ray's session and spilling are not on the data root.
    (_ray_case(100, volumes=["/data/ray:/tmp/ray:rw"]), False, ""),
    (_ray_case(100, volumes=["/data/ray_tmp:/tmp/ray"]), False, ""),
    # Ray's temporary folder moved (--temp-dir, given to every ray start): its spilling goes there, and a mount there
    # (or above it) takes it off the data root; /tmp/ray is then not Ray's.
    (_ray_case(100, ray_args=["--temp-dir=/data/ray"]), True, "Ray's spilling to the container's /data/ray, " + DEFAULT_STORE),
    (_ray_case(100, ray_args=["--temp-dir=/data/ray"], volumes=["/mnt/nvme/ray:/data/ray"]), False, ""),
    (_ray_case(100, ray_args=["--temp-dir=/data/ray/"], volumes=["/mnt/nvme:/data"]), False, ""),
    (_ray_case(100, ray_args=["--temp-dir=/data/ray"], volumes=["/mnt/nvme/ray:/tmp/ray"]), True, "/tmp and /data/ray, where Ray keeps"),
])
def test_ray_s_room_in_the_container_s_tmp_is_a_warning_never_a_refusal(case, warned, words):
    text = pc.docker_root_tight(case)
    assert bool(text) is warned and words in text, text
    assert pc.docker_root_short(case) == "", "Ray's room never refuses a setup"
    if warned:
        assert "over 95% full" in text, text
        # The fixes it names: its own mount of Ray's temporary folder on a larger disk (with /dev/shm large enough for the
        # store), or space freed.
        mount = json.loads(re.search(r"verl_container_extra_volumes: (\[[^]]*\])", text).group(1))
        assert mount == ["/data/ray_tmp:%s" % pc.ray_temp_dir(case["launch"])], text
        fixed = dict(case, launch=dict(case["launch"], container={"volumes": mount}),
                     facts=dict(case["facts"], shm={"size_kb": 2 ** 40, "free_kb": 2 ** 40}))
        assert "Ray" not in pc.docker_root_tight(fixed)
        freed = dict(case, docker=dict(case["docker"], root_free_bytes=10 ** 15, root_size_bytes=10 ** 15))
        assert pc.docker_root_tight(freed) == ""
    from ansible_collections.verl.deploy.plugins.module_utils import _inputs
    assert _inputs.path_problem(pc.ray_temp_dir(case["launch"]), "mount") is None, "the fix is a mount the settings check accepts"


SPILL_S3 = json.dumps({"object_spilling_config": json.dumps({"type": "smart_open", "params": {"uri": "s3://bucket/spill"}})})
SPILL_TWO = json.dumps({"object_spilling_config": json.dumps({"type": "filesystem", "params": {"directory_path": ["/mnt/a", "/mnt/b"]}})})


@pytest.mark.parametrize("ray_args, volumes, words", [
    # Where Ray 2.60 spills (node.py, _get_object_spilling_config): a spilling folder on a mount takes spilling off the data root.
    (["--object-spilling-directory=/mnt/spill"], ["/data/spill:/mnt/spill"], None),
    (["--object-spilling-directory=/mnt/spill"], [], "Ray's spilling to the container's /mnt/spill, "),
    (['--system-config={"object_spilling_directory": "/mnt/spill"}'], ["/nvme:/mnt"], None),
    (["--system-config=" + SPILL_TWO], ["/nvme:/mnt"], None),
    (["--system-config=" + SPILL_TWO], ["/nvme/a:/mnt/a"], "Ray's spilling to the container's /mnt/b, "),
    # Spilling to object storage (smart_open, S3): nothing spills to the container's disk.
    (["--system-config=" + SPILL_S3], [], None),
    # The object store's own files in --plasma-directory: on the data root unless that is a mount.
    (["--plasma-directory=/mnt/plasma", "--object-spilling-directory=/mnt/spill"], ["/nvme:/mnt/spill"],
     "Ray's object store in the container's /mnt/plasma (--plasma-directory)"),
    (["--plasma-directory=/mnt/plasma", "--object-spilling-directory=/mnt/spill"], ["/nvme:/mnt"], None),
])
def test_ray_s_spilling_and_store_folders_count_only_off_a_mount(ray_args, volumes, words):
    """A valid setup that moved Ray's spilling or store to a mounted disk is not warned about; one that did not is, and the
    mounts the warning gives take the warning away."""
    case = _ray_case(100, ray_args=ray_args, volumes=volumes)
    text = pc.docker_root_tight(case)
    assert (text == "") is (words is None) and (words is None or words in text), text
    if words:
        mounts = json.loads(re.search(r"verl_container_extra_volumes: (\[[^]]*\])", text).group(1))
        fixed = dict(case, launch=dict(case["launch"], container={"volumes": volumes + mounts}))
        assert pc.docker_root_tight(fixed) == "", pc.docker_root_tight(fixed)


@pytest.mark.parametrize("free_gib, elsewhere, problem, warning", [
    (10, 18.5, True, False), (20, 18.5, False, True), (23.2, 18.5, False, False),
    (1, None, False, False),  # no node has it: its size is not known, nothing is said
])
def test_docker_space_is_refused_only_on_evidence(free_gib, elsewhere, problem, warning):
    case = _pull_case(free_gib, elsewhere=elsewhere)
    assert bool(pc.docker_root_short(case)) is problem and bool(pc.docker_root_tight(case)) is warning


# Issue 60: each problem once, each fix once.
MISSING = {"paths": {"checks": [{"variable": "verl_train_file", "path": "/d/train.parquet", "kind": "file"},
                                {"variable": "verl_test_file", "path": "/d/test.parquet", "kind": "file"}],
                     "state": {}}}
NOT_PARQUET = {"error": "[Errno 2] No such file or directory: '/d/train.parquet'"}


def test_a_data_set_that_is_not_there_is_one_problem_not_two():
    launch = dict(LAUNCH, train_file="/d/train.parquet", test_file="/d/test.parquet", train_batch_size=32)
    read = {"/d/train.parquet": NOT_PARQUET, "/d/test.parquet": dict(NOT_PARQUET)}
    problems = pc.report(dict(MISSING, launch=launch, facts={"parquet": read}))["problems"]
    assert [problem for problem in problems if "parquet" in problem] == [
        "verl_train_file=/d/train.parquet is not an existing file on this host. verl_test_file=/d/test.parquet is not an existing "
        "file on this host. Fix: give the path as it is on every node (shared storage), or copy the data there."]


def test_two_files_that_are_not_parquet_share_one_fix():
    launch = dict(LAUNCH, train_file="/d/train.csv", test_file="/d/test.csv", train_batch_size=32)
    read = {"/d/train.csv": {"error": "not a parquet file"}, "/d/test.csv": {"error": "not a parquet file"}}
    there = {"paths": {"checks": MISSING["paths"]["checks"], "state": {
        path: {"exists": True, "isreg": True} for path in ("/d/train.csv", "/d/test.csv")}}}
    problem = pc.datasets_not_verls(dict(there, launch=launch, facts={"parquet": read}))
    assert problem.count("Fix:") == 1 and problem.count("preprocessing scripts") == 1, problem
    assert problem.startswith("verl_train_file=/d/train.csv cannot be read as parquet: not a parquet file. verl_test_file=/d/test.csv "
                              "cannot be read as parquet: not a parquet file. Fix: give a parquet file"), problem


@pytest.mark.parametrize("sentences, folded", [
    (["A. Fix: F.", "B. Fix: F."], ["A. B. Fix: F."]),
    (["A.", "B. Fix: F.", "C. Fix: G.", "D. Fix: F."], ["A. B. D. Fix: F.", "C. Fix: G."]),
    (["A. Fix: F.", "B."], ["A. Fix: F.", "B."]),
])
def test_fold_fixes(sentences, folded):
    assert pc.fold_fixes(sentences) == folded


def test_npu_smi_not_found_says_its_fix_once():
    msg = ("npu-smi not found: searched PATH (/usr/bin) and /usr/local/sbin/npu-smi. Fix: install the Ascend driver (or mount it "
           "into the container), or set verl_npu_smi_path.")
    problem = pc.npu_smi_failed({"npu": {"failed": True, "msg": msg}})
    assert problem == "npu-smi failed: " + msg and problem.count("Fix:") == 1


def test_the_report_has_each_problem_in_at_most_two_terminal_lines():
    report = pc.report(dict(MISSING, launch=dict(LAUNCH, train_file="/d/train.parquet", test_file="/d/test.parquet"),
                            npu={"failed": True, "msg": "dcmi module initialize failed. ret is -8005"}))
    assert len(report["brief"]) <= 2 * len(report["problems"]) and all(len(line) <= 120 for line in report["brief"])
    firsts = [line for line in report["brief"] if line.startswith("- ")]
    assert [line[2:22] for line in firsts] == [problem[:20] for problem in report["problems"]], (firsts, report["problems"])


def _host_case(tmp_path, available_gib, npus=8, **settings):
    case = memory_checked(tmp_path, config=model_files.QWEN3_8B, **settings)
    case["facts"]["memory"] = {"total_kb": 1024 * GIB_KB, "available_kb": int(available_gib * GIB_KB)}
    case["launch"]["npu_devices"] = list(range(npus))
    return case


@pytest.mark.parametrize("mask, available, words, enough", [
    # vLLM-Ascend sleeps at level 1: Qwen3-8B's rollout weights at TP 4 (3.8 GiB) move to each worker's host memory.
    ("0000000", 80, "more once vLLM sleeps after the first rollout", 100),
    # Offload (bit 2): the actor's parameters, gradients and optimizer state (17.2 GiB per worker at TP 4 x PP 2) stay there.
    ("0010000", 150, "more for what Offload (bit 2) or Swap Optimizer (bit 5) keeps in host memory", 210),
])
def test_host_memory_per_worker_follows_the_model_and_the_offload_bits(tmp_path, mask, available, words, enough):
    """A worker taken by the OOM killer at vLLM's sleep (verl#224: each rollout process held 11 GB of host memory, "vllm会
    offload参数到cpu memory"): the room per worker is 8 GiB at its start plus what the model and the mask move to host
    memory, not 8 GiB for every model. The fixes it names (that much memory free, or the NPUs it names) pass."""
    text = pc.host_memory_short(_host_case(tmp_path, available, verl_feature_mask=mask))
    assert words in text and "Task was killed due to the node running low on memory" in text, text
    assert pc.host_memory_short(_host_case(tmp_path, available / 4)) != ""
    assert pc.host_memory_short(_host_case(tmp_path, enough, verl_feature_mask=mask)) == ""
    fits = int(text.split("give verl_npu_devices at most ", 1)[1].split(" ", 1)[0])
    assert pc.host_memory_short(_host_case(tmp_path, available, npus=fits, verl_feature_mask=mask)) == ""
    # The constant alone (8 GiB per worker) would have let it pass.
    assert available * GIB_KB * 1024 >= 8 * pc.WORKER_START_BYTES


def test_the_hosts_driver_is_judged_against_the_images_cann():
    """node_facts' ascend read against verl_image's CANN: refused below the oldest HDK it supports, a warning below the one it
    is released with; nothing without the versions (a host without the files)."""
    image = _versions.BY_PROFILE["0.8.0"]["images"]["910b"]
    host = npu("011_info_910B2_8cards_v24.1.0_procs_mindie.txt", {})
    old = checked(host, launch=dict(LAUNCH, image=image), host="node2")
    old["facts"]["ascend"] = {"driver": "24.1.0", "firmware": "7.5.0.1.129", "firmware_hdk": "24.1.0"}
    assert "node2's driver 24.1.0" in pc.driver_older_than_cann(old)
    assert any("older than 25.0, the oldest Ascend HDK that CANN 9.0.0 supports" in text for text in pc.report(old)["problems"])
    old["facts"]["ascend"] = {"driver": "25.5.1", "firmware": "7.8.0.6.201", "firmware_hdk": "25.5.1"}
    assert pc.driver_older_than_cann(old) == "" and "26.0.RC1" in pc.driver_behind_cann(old)
    old["facts"].pop("ascend")
    assert pc.driver_older_than_cann(old) == pc.driver_behind_cann(old) == ""
