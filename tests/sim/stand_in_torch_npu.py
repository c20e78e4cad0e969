"""Stand-in for torch_npu in the simulated verl image (tests/sim/simcluster.py installs it as the package
torch_npu in /opt/verl-venv).

Like the real one, it loads only with CANN's environment: without the toolkit's library folder on
LD_LIBRARY_PATH (what ascend-toolkit/set_env.sh exports) the import fails as the real import fails when
libhccl.so is not found. torch_npu.npu.device_count() counts the /dev/davinciN devices the container
has (the NPUs it was given; all of the node's when privileged). SIM_DEV_DIR moves /dev for tests.
"""
from __future__ import annotations

import os
import re

__version__ = "2.7.1+verl-sim"

_TOOLKIT = os.environ.get("ASCEND_TOOLKIT_HOME", "")
if not _TOOLKIT or os.path.join(_TOOLKIT, "lib64") not in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
    raise ImportError("libhccl.so: cannot open shared object file: No such file or directory "
                      "(verl-sim: CANN's set_env.sh was not sourced)")


class _Npu:
    """The part of torch_npu.npu the deploy asks."""

    @staticmethod
    def device_count():
        folder = os.environ.get("SIM_DEV_DIR", "/dev")
        return sum(1 for name in os.listdir(folder) if re.fullmatch(r"davinci\d+", name))

    @classmethod
    def is_available(cls):
        return cls.device_count() > 0


npu = _Npu()
