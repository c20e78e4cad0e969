"""The simulated cluster's connection to a node: community.docker.docker, with a node that does not answer as SSH has it.

A real node is reached over SSH, with pipelining on (ansible.cfg): each module goes down one connection's stdin. A
simulated node is a container reached with `docker exec`, and a test makes it stop answering with `docker pause` (its
processes frozen, as a hung host's). Over SSH such a node is UNREACHABLE (ssh gives up: exit code 255). Through
`docker exec` the engine refuses at once ("Container ... is paused, unpause the container before exec"); without
pipelining Ansible's first step (making a temporary folder) failing made that UNREACHABLE too, with pipelining the
module's own run fails and the task is FAILED. This connection raises the engine's refusal of the node as a connection
failure, so that the simulated nodes pipeline as real ones do and a paused node stays unreachable.
"""
from __future__ import annotations

import re

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text
from ansible_collections.community.docker.plugins.connection import docker

# The engine's words for a container it cannot exec in (docker CLI 20.10-27): the node is down, not the command.
NOT_ANSWERING = re.compile(r"^Error response from daemon: Container \S+ is (paused|not running|restarting)"
                           r"|^Error( response from daemon)?: No such container", re.MULTILINE)

# community.docker.docker's options, and pipelining's (ansible_pipelining, as ansible.builtin.ssh reads it).
DOCUMENTATION = docker.DOCUMENTATION.replace("name: docker\n", "name: node\n", 1) + "extends_documentation_fragment: [connection_pipelining]\n"


class Connection(docker.Connection):
    """community.docker.docker, the engine's refusal of the node raised as unreachable."""

    transport = "verl_sim.cluster.node"

    def exec_command(self, cmd, in_data=None, sudoable=False):
        returncode, stdout, stderr = super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if returncode and NOT_ANSWERING.search(to_text(stderr, errors="surrogate_or_replace")):
            raise AnsibleConnectionFailure("%s does not answer: %s" % (self.get_option("remote_addr"), to_text(stderr).strip()))
        return returncode, stdout, stderr
