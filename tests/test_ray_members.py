"""The members step's question to the head's Ray (roles/training/files/ray_members.py), run as verl_control.sh runs it,
against a stand-in `ray` package that answers as Ray's GCS client and as a driver: the nodes alive, IP=NPUS, sorted."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "roles" / "training" / "files" / "ray_members.py"
NODES = [("10.0.0.2", 8.0, True), ("10.0.0.1", 8.0, True), ("10.0.0.3", 8.0, False), ("10.0.0.4", 0, True)]
RAY = {
    "ray/__init__.py": "NODES = %r\nADDRESS = []\n"
                       "def init(address, **_kw):\n    ADDRESS.append(address)\n"
                       "def nodes():\n    return [{'NodeManagerAddress': ip, 'Resources': {'NPU': npus} if npus else {}, 'Alive': alive}"
                       " for ip, npus, alive in NODES]\n" % (NODES,),
    "ray/_raylet.py": "import types\nfrom ray import NODES\n"
                      "class GcsClient:\n    def __init__(self, address):\n        assert address == '10.0.0.1:6379'\n"
                      "    def get_all_node_info(self, timeout):\n"
                      "        return {i: types.SimpleNamespace(node_manager_address=ip, resources_total={'NPU': npus} if npus else {},"
                      " state=1 if alive else 2) for i, (ip, npus, alive) in enumerate(NODES)}\n",
    "ray/core/__init__.py": "", "ray/core/generated/__init__.py": "",
    "ray/core/generated/gcs_pb2.py": "class GcsNodeInfo:\n    ALIVE = 1\n",
}


@pytest.mark.parametrize("how", ["gcs", "driver"])
def test_the_nodes_alive_with_their_npus(tmp_path, how):
    for name, text in RAY.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    proc = subprocess.run([sys.executable, "-B", str(SCRIPT), how, "10.0.0.1:6379"], capture_output=True, text=True, check=False,
                          env=dict(os.environ, PYTHONPATH=str(tmp_path)), timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "10.0.0.1=8,10.0.0.2=8,10.0.0.4=0\n"), proc.stderr
