"""The pure parts of verl.deploy.node_facts: `ip` output, routes, ports, /dev/davinci holders, Docker, searches."""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _node_facts as nf

ADDR = """1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
2: eth0    inet 172.19.0.3/16 brd 172.19.255.255 scope global eth0\\       valid_lft forever preferred_lft forever
3: docker0    inet 10.96.1.1/24 brd 10.96.1.255 scope global docker0\\       valid_lft forever preferred_lft forever
7: enp1s0@if9    inet 192.168.10.5/24 scope global enp1s0
7: enp1s0@if9    inet 192.168.10.6/24 scope global secondary enp1s0
"""
ROUTES = """default via 172.19.0.1 dev eth0
10.96.1.0/24 dev docker0 proto kernel scope link src 10.96.1.1 linkdown
172.19.0.0/16 dev eth0 proto kernel scope link src 172.19.0.3
192.168.10.0/24 dev enp1s0 proto kernel scope link metric 100
192.168.0.0/16 via 192.168.10.1 dev enp1s0 metric 50
unreachable 10.200.0.0/16
"""
TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:23CE 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:2044 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0
   2: 0300130A:C350 0100130A:23CE 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 20 4 30 10 -1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5 1
"""

ADDRESSES = nf.parse_ip_addr(ADDR)
TABLE = nf.parse_ip_routes(ROUTES)


def test_addresses_per_interface():
    assert ADDRESSES["eth0"] == [{"address": "172.19.0.3", "prefixlen": 16}]
    assert [a["address"] for a in ADDRESSES["enp1s0"]] == ["192.168.10.5", "192.168.10.6"], "the @ifN suffix is not part of the name"


def test_the_routing_table():
    assert TABLE[0] == {"dest": "0.0.0.0/0", "via": "172.19.0.1", "dev": "eth0", "src": None, "metric": 0, "type": "unicast"}
    assert TABLE[-1]["type"] == "unreachable" and TABLE[-1]["dev"] is None
    assert nf.parse_ip_routes("garbage here\n\n") == []


@pytest.mark.parametrize("target, ok, dev, src, via", [
    ("172.19.0.7", True, "eth0", "172.19.0.3", None),          # a peer on the same bridge
    ("172.19.0.3", True, "lo", "172.19.0.3", None),            # the host itself (the head routing to its own address)
    ("192.168.10.77", True, "enp1s0", "192.168.10.5", None),   # longest prefix wins over the /16; no src: the interface's first
    ("192.168.20.1", True, "enp1s0", "192.168.10.5", "192.168.10.1"),
    ("8.8.8.8", True, "eth0", "172.19.0.3", "172.19.0.1"),     # the default route
    ("10.200.1.1", False, None, None, None),                    # an `unreachable` route wins by its longer prefix
    ("head.example", None, None, None, None),                   # a name must be resolved on the host
])
def test_route_to(target, ok, dev, src, via):
    route = nf.route_to(target, TABLE, ADDRESSES)
    assert (route["ok"], route["dev"], route["src"], route["via"]) == (ok, dev, src, via)


def test_no_route_without_a_matching_entry():
    assert nf.route_to("8.8.8.8", [r for r in TABLE if r["dest"] != "0.0.0.0/0"], ADDRESSES)["ok"] is False


def test_default_ipv4_as_setup_names_it():
    assert nf.default_ipv4(TABLE, ADDRESSES) == {"address": "172.19.0.3", "interface": "eth0", "gateway": "172.19.0.1"}
    assert nf.default_ipv4([], ADDRESSES) == {}


@pytest.mark.parametrize("text, wanted", [
    ("local 172.19.0.3 dev lo table local src 172.19.0.3 uid 0 \\    cache <local> ", {"dev": "lo", "src": "172.19.0.3", "via": None, "local": True}),
    ("10.0.0.9 via 172.19.0.1 dev eth0 src 172.19.0.3 uid 0 \\    cache ", {"dev": "eth0", "src": "172.19.0.3", "via": "172.19.0.1", "local": False}),
    ("", {"dev": None, "src": None, "via": None, "local": False}),
])
def test_route_get(text, wanted):
    assert nf.parse_route_get(text) == wanted


def test_listening_ports_ipv4_and_ipv6_only_in_listen_state():
    assert nf.listening_sockets(TCP, TCP6) == {9166: {"1"}, 8260: {"2"}, 22: {"5"}}


def test_a_listening_port_is_named_with_the_process_whose_fd_holds_its_socket():
    """/proc/<pid>/fd/N links to socket:[<inode>], the inode /proc/net/tcp gives the listening socket."""
    processes = [{"pid": 4242, "name": "python3", "fds": ["/dev/null", "socket:[1]", "socket:[9]"]},
                 {"pid": 7, "name": "sshd", "fds": ["socket:[5]"]}, {"pid": 8, "name": "bash", "fds": ["pipe:[2]"]}]
    sockets = nf.listening_sockets(TCP, TCP6)
    assert nf.port_holders(sockets, processes) == {9166: ["4242 (python3)"], 22: ["7 (sshd)"]}
    assert nf.port_holders(sockets, processes, ports={9166}) == {9166: ["4242 (python3)"]}
    # 8260's socket is held by a process this user cannot see: left out, not reported as free.
    assert 8260 not in nf.port_holders(sockets, processes)


def test_device_holders_with_their_container():
    cid = "a" * 64
    holders = nf.device_holders([
        {"pid": 10, "name": "python3", "fds": ["/dev/davinci1", "/dev/davinci_manager", "/dev/null"], "cgroup": "12:pids:/docker/%s\n" % cid},
        {"pid": 7, "name": "npu-exporter", "fds": ["/dev/davinci10", "/dev/davinci1"], "cgroup": "0::/system.slice/x.service\n"},
        {"pid": 8, "name": "bash", "fds": ["/dev/pts/0"], "cgroup": ""},
    ])
    assert [(h["device"], h["pid"], h["container_id"]) for h in holders] == [
        ("/dev/davinci1", 7, None), ("/dev/davinci1", 10, cid), ("/dev/davinci10", 7, None)]


LISTED = [
    {"Id": "1" * 64, "Names": ["/verl"], "Image": "verl:1", "Status": "Up 2 hours", "State": "running", "Labels": {"verl-deploy": "managed"}},
    {"Id": "2" * 64, "Names": ["/other"], "Image": "x", "Status": "Up 1 minute", "State": "running", "Labels": None},
    {"Id": "3" * 64, "Names": ["/old"], "Image": "x", "Status": "Exited (0)", "State": "exited"},
    {"Id": "4" * 64, "Names": ["/priv"], "Image": "x", "Status": "Up 3 s", "State": "running"},
]
INSPECTED = {
    "1" * 64: {"HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci0"}], "Privileged": False}},
    "2" * 64: {"HostConfig": {"Devices": [{"PathOnHost": "/dev/davinci1"}]}},
    "4" * 64: {"HostConfig": {"Devices": None, "Privileged": True}},
}
CONTAINERS = nf.summarize_containers(LISTED, INSPECTED)


def test_containers_keep_docker_host_info_keys():
    assert set(CONTAINERS[0]) >= {"Id", "Names", "Image", "Status", "State", "Labels", "HostConfig"}
    assert CONTAINERS[2]["HostConfig"] == {"Devices": [], "Privileged": False}, "a stopped container holds nothing"


# The privileged container "priv" with a process that has /dev/davinci0 open (read from /proc/<pid>/fd on the host).
PRIV_OPENS_0 = [{"device": "/dev/davinci0", "pid": 901, "name": "python3", "container_id": "4" * 64}]


@pytest.mark.parametrize("devices, exclude, opened, holders", [
    (["/dev/davinci1"], "verl", [], ["other"]),
    # A privileged container holds only what its processes open.
    (["/dev/davinci0"], "verl", [], []),
    (["/dev/davinci0"], "verl", PRIV_OPENS_0, ["priv"]),
    (["/dev/davinci1"], "verl", PRIV_OPENS_0, ["other"]),
    (["/dev/davinci0"], "", [], ["verl"]),
    (["/dev/davinci7"], "priv", PRIV_OPENS_0, []),
])
def test_holding_containers(devices, exclude, opened, holders):
    assert nf.holding_containers(CONTAINERS, devices, exclude, opened) == holders


def test_a_privileged_container_that_opens_no_npu_is_idle():
    assert nf.npu_containers(CONTAINERS, ["/dev/davinci0"], "verl")["idle_privileged"] == ["priv"]
    # One that has another NPU open holds that one, not these: not idle either.
    other = [dict(PRIV_OPENS_0[0], device="/dev/davinci5")]
    assert nf.npu_containers(CONTAINERS, ["/dev/davinci0"], "verl", other) == {"holding": [], "idle_privileged": []}
    found = nf.npu_containers(CONTAINERS, ["/dev/davinci0"], "verl", PRIV_OPENS_0)
    assert found["holding"] == [{"name": "priv", "id": "4" * 64, "opened": ["/dev/davinci0"], "mapped": [], "privileged": True,
                                 "pids": ["901 (python3)"]}]


def test_container_info_like_docker_container_info():
    found = nf.container_info(CONTAINERS, "verl")
    assert found["exists"] and found["container"]["State"] == {"Status": "running", "Running": True}
    assert found["container"]["Config"]["Labels"] == {"verl-deploy": "managed"} and found["container"]["Name"] == "/verl"
    # The image the container was created from, where docker_container_info has it (the container stage names it).
    assert found["container"]["Config"]["Image"] == found["container"]["Image"] == CONTAINERS[0]["Image"]
    assert nf.container_info(CONTAINERS, "old")["container"]["State"]["Running"] is False
    assert nf.container_info(CONTAINERS, "absent") == {"exists": False, "container": None}


@pytest.mark.parametrize("ref, present", [
    ("ubuntu", True), ("ubuntu:latest", True), ("docker.io/library/ubuntu:latest", True), ("ubuntu:22.04", False),
    ("registry:5000/verl/verl-sim:abc", True), ("registry:5000/verl/verl-sim", False),
    ("quay.io/ascend/verl@sha256:" + "f" * 64, True), ("quay.io/ascend/verl:v1", False),
])
def test_image_present(ref, present):
    images = [{"Id": "sha256:1", "RepoTags": ["ubuntu:latest"]}, {"Id": "sha256:2", "RepoTags": ["registry:5000/verl/verl-sim:abc"]},
              {"Id": "sha256:3", "RepoTags": ["<none>:<none>"], "RepoDigests": ["quay.io/ascend/verl@sha256:" + "f" * 64]}]
    assert nf.image_present(images, ref) is present


def test_find_paths_depth_type_and_limit(tmp_path):
    for rel in ("a/Qwen3-8B", "a/b/c/Qwen2", "a/b/c/d/Qwen-too-deep", "data/x/train.parquet", "data/Qwen-file"):
        path = tmp_path / rel
        if rel.endswith(".parquet") or rel.endswith("file"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
        else:
            path.mkdir(parents=True)
    root = str(tmp_path)
    assert nf.find_paths([root, "/no/such"], ["Qwen*"], "directory", depth=4) == [root + "/a/Qwen3-8B", root + "/a/b/c/Qwen2"]
    assert nf.find_paths([root], ["Qwen*"], "file") == [root + "/data/Qwen-file"]
    assert nf.find_paths([root], ["*.parquet"], "file", limit=0) == []
    assert len(nf.find_paths([root], ["*"], "any", depth=1)) == 2


def test_path_state_follows_links(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    expected = {"exists": True, "isdir": True, "isreg": False, "real": str(tmp_path / "d"), "kind": "directory"}
    assert nf.path_state(str(tmp_path / "link")) == expected
    assert nf.path_state(str(tmp_path / "dangling"))["exists"] is False


def test_path_state_resolves_links_and_dotdot_on_the_host_also_below_a_path_not_made_yet(tmp_path):
    """The host's own answer: a log folder under a link to /etc is /etc/..., whatever its text says."""
    (tmp_path / "logs").symlink_to("/etc")
    assert nf.path_state(str(tmp_path / "logs" / "verl"))["real"] == "/etc/verl"
    assert nf.path_state(str(tmp_path / "logs" / ".."))["real"] == "/", "'..' after a link is taken back from where it points"


def test_path_state_says_what_kind_of_thing_a_path_is(tmp_path):
    import socket  # pylint: disable=import-outside-toplevel

    (tmp_path / "f").write_text("x")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s"))
    try:
        kinds = {name: nf.path_state(str(tmp_path / name))["kind"] for name in ("f", "s", "none")}
    finally:
        server.close()
    assert kinds == {"f": "file", "s": "socket", "none": "missing"}
    assert nf.path_state(str(tmp_path))["kind"] == "directory" and nf.path_state("/dev/null")["kind"] == "other"


OUTER, INNER = "a" * 64, "b" * 64


@pytest.mark.parametrize("cgroup, host, container", [
    ("12:pids:/docker/%s\n11:memory:/docker/%s\n" % (INNER, INNER), "12:pids:/\n", INNER),              # cgroup v1, cgroupfs
    ("0::/system.slice/docker-%s.scope\n" % INNER, "0::/init.scope\n", INNER),                          # cgroup v2, systemd
    ("0::/kubepods/burstable/pod1/cri-containerd-%s.scope\n" % INNER, "0::/\n", INNER),                   # containerd
    ("0::/machine.slice/libpod-%s.scope\n" % INNER, "0::/\n", INNER),                                     # podman
    ("0::/system.slice/sshd.service\n", "0::/init.scope\n", None),                                        # a host process
    # A host that itself is a container (a Docker-in-Docker node, a pod): its own id is not a container of it.
    ("12:pids:/docker/%s/docker/%s\n" % (OUTER, INNER), "12:pids:/docker/%s\n" % OUTER, INNER),
    ("12:pids:/docker/%s\n" % OUTER, "12:pids:/docker/%s\n" % OUTER, None),
    ("", "", None),
])
def test_the_container_of_a_process_is_the_innermost_id_of_its_cgroup(cgroup, host, container):
    assert nf.container_of(cgroup, host) == container


def test_npu_smi_processes_are_annotated_with_what_this_host_shows_of_their_pid():
    files = {"/proc/10/cgroup": "12:pids:/docker/%s\n" % INNER, "/proc/10/comm": "ray::WorkerDict\n", "/proc/7/cgroup": "0::/user.slice\n",
             "/proc/7/comm": "python3\n"}
    processes = [{"npu_id": 0, "pid": 10, "name": ""}, {"npu_id": 1, "pid": 7, "name": "vllm"}, {"npu_id": 2, "pid": 99, "name": ""}]
    annotated = nf.annotate_processes(processes, files.get, "12:pids:/\n")
    assert [(p["pid"], p["seen"], p["comm"], p["container_id"]) for p in annotated] == [
        (10, True, "ray::WorkerDict", INNER), (7, True, "python3", None), (99, False, "", None)]
    assert annotated[1]["name"] == "vllm", "npu-smi's own columns are kept"


@pytest.mark.parametrize("text, key, value", [
    ("link status: UP\n", "link status", "UP"), ("link status: DOWN\n", "link status", "DOWN"),
    ("net health status: Success\n", "net health status", "Success"),
    ("net health status: Receive timeout\n", "net health status", "Receive timeout"),
    ("dev_id(9) is invalid.\n", "link status", None), ("", "link status", None),
])
def test_hccn_tools_answers(text, key, value):
    assert nf.parse_hccn_value(text, key) == value


def test_a_pid_that_ended_between_two_npu_smi_reads_is_not_a_holder():
    """A training's worker that exits while the pre-check reads: npu-smi listed it, /proc no longer shows it."""
    annotated = [{"pid": 10, "seen": True}, {"pid": 11, "seen": False}, {"pid": 12, "seen": False}]
    assert nf.still_listed(annotated, [{"pid": 10}, {"pid": 12}]) == [{"pid": 10, "seen": True}, {"pid": 12, "seen": False}]
    assert nf.still_listed(annotated, []) == [{"pid": 10, "seen": True}]


# The two files as public pastes show them (a 910B4 host with HDK 24.1.rc3; a driver 25.0.rc1.1 host's firmware).
DRIVER_INFO = ("Version=24.1.rc3\nascendhal_version=7.35.23\naicpu_version=1.0\ntdt_version=1.0\nlog_version=1.0\nprof_version=2.0\n"
               "dvppkernels_version=1.1\ntsfw_version=1.0\nInnerversion=V100R001C19SPC001B124\n"
               "compatible_version=[V100R001C13],[V100R001C15],[V100R001C17],[V100R001C18],[V100R001C19]\n"
               "compatible_version_fw=[7.0.0,7.5.99]\npackage_version=24.1.rc3\n")
FIRMWARE_INFO = ("Version=7.7.0.1.231\nfirmware_version=1.0\npackage_version=25.0.rc1.1\n"
                 "compatible_version_drv=[23.0.0,23.0.0.],[24.0,24.0.],[24.1,24.1.],[25.0,25.0.]\n")


@pytest.mark.parametrize("driver, firmware, wanted", [
    (DRIVER_INFO, FIRMWARE_INFO, {"driver": "24.1.rc3", "firmware": "7.7.0.1.231", "firmware_hdk": "25.0.rc1.1"}),
    ("package_version=25.2.0\n", "", {"driver": "25.2.0", "firmware": None, "firmware_hdk": None}),
    ("", "", {"driver": None, "firmware": None, "firmware_hdk": None})])
def test_the_hosts_driver_and_firmware_versions(driver, firmware, wanted):
    assert nf.ascend_versions(driver, firmware) == wanted
