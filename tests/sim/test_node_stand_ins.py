"""The simulated node's stand-ins without a cluster, read back by the collection's own parsers
(plugins/module_utils/_node_facts.py) as the pre-check reads a real node: hccn_tool (tests/sim/node/hccn_tool.py; the
answers' shapes are real ones: capture 023 for `-ip -g`, CANN's HCCL troubleshooting guide, EI0016, for `-tls -g`; a test
makes one node's NPU disagree) and the node's /proc/meminfo (simcluster.meminfo_text)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ansible_collections.verl.deploy.plugins.module_utils import _node_facts as nf

TOOL = Path(__file__).resolve().parent / "node" / "hccn_tool.py"
CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "npu-smi" / "023_hccn_tool_ip_g_card3.txt"


def run(tmp_path, *args, state=""):
    (tmp_path / "dev").mkdir(exist_ok=True)
    for device in range(2):
        (tmp_path / "dev" / ("davinci%d" % device)).touch()
    (tmp_path / "hccn").write_text(state)
    env = dict(os.environ, SIM_DEV_DIR=str(tmp_path / "dev"), SIM_HCCN_STATE=str(tmp_path / "hccn"))
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, env=env, check=False)


def test_the_real_answers_and_the_stand_ins_read_the_same():
    assert nf.parse_hccn_ip(CAPTURE.read_text()) == {"address": "29.1.112.213", "netmask": "255.255.0.0"}
    real_tls = "dev_id:0, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days\ndev_id:0, [pub cert] info:\n"
    assert nf.parse_hccn_tls(real_tls) == "disabled"
    assert nf.parse_hccn_tls(real_tls.replace("switch[0]", "switch[1]")) == "enabled"
    assert nf.parse_hccn_tls("hccn_tool is busy, please try again") is None


def test_the_stand_in_answers_ip_and_tls_and_a_test_makes_one_npu_disagree(tmp_path):
    assert nf.parse_hccn_tls(run(tmp_path, "-i", "1", "-tls", "-g").stdout) == "disabled"
    assert nf.parse_hccn_ip(run(tmp_path, "-i", "1", "-ip", "-g").stdout)["netmask"] == "255.255.0.0"
    state = "1 tls 1\n1 ip 29.1.9.9\n"
    assert nf.parse_hccn_tls(run(tmp_path, "-i", "1", "-tls", "-g", state=state).stdout) == "enabled"
    assert nf.parse_hccn_ip(run(tmp_path, "-i", "1", "-ip", "-g", state=state).stdout)["address"] == "29.1.9.9"
    assert nf.parse_hccn_tls(run(tmp_path, "-i", "0", "-tls", "-g", state=state).stdout) == "disabled"
    missing = run(tmp_path, "-i", "7", "-tls", "-g")
    assert missing.returncode == 1 and nf.parse_hccn_tls(missing.stdout) is None


def test_hccn_conf_addresses():
    text = "address_0=29.1.112.210\nnetmask_0=255.255.0.0\nnetdetect_0=29.1.0.1\n# address_9=1.1.1.1\naddress_3=29.1.112.213\n"
    assert nf.parse_hccn_conf(text) == {"0": "29.1.112.210", "3": "29.1.112.213"}


def test_the_simulated_nodes_memory_reads_as_a_real_meminfo():
    """simcluster's /proc/meminfo of a node (bind-mounted over the kernel's), read by the pre-check's own parser."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import simcluster  # pylint: disable=import-outside-toplevel
    text = simcluster.meminfo_text(simcluster.NODE_MEMORY_KB, 2 * 1024 * 1024)
    assert nf.meminfo(text) == {"total_kb": simcluster.NODE_MEMORY_KB, "available_kb": 2 * 1024 * 1024}
    assert text.splitlines()[0] == "MemTotal:       1073741824 kB"
    real = "MemTotal:       24683568 kB\nMemFree:         1811324 kB\nMemAvailable:   21790484 kB\nBuffers:          845052 kB\n"
    assert nf.meminfo(real) == {"total_kb": 24683568, "available_kb": 21790484}
