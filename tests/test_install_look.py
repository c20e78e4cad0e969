"""install.yml's files: what it installs and what its look expects are exactly what the template tasks write.

install.yml renders the files once on the controller (_training_rendered_b64) and sends that text to the host;
its look skips the install only when the container's checksums equal install_plan's wanted lines. Both must be the files
Ansible's template module writes (what playbooks/render.yml renders and the script tests check); a playbook
renders them both ways and compares (no host is contacted: the default inventory is this machine, the
scripts go to a temporary folder).
"""
from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ANSIBLE_PLAYBOOK = str(Path(sys.executable).with_name("ansible-playbook"))

PLAY = """- hosts: ray_head
  gather_facts: false
  vars:
    # What the role's own tasks have (the vars find the collection's npu-smi parser from it).
    role_path: "%s/roles/training"
  tasks:
    - name: Check the settings
      ansible.builtin.include_role:
        name: verl.deploy.verl
        tasks_from: validate
        public: true
    - name: Render on the controller with the template module
      ansible.builtin.include_role:
        name: verl.deploy.training
        tasks_from: render
        public: true
    - name: Write verl_control.sh, its values and the launch record with the copy module
      ansible.builtin.include_tasks: "{{ playbook_dir }}/copy.yml"
    - name: What install.yml sends, as install.yml keeps it
      ansible.builtin.set_fact:
        __training_files: "{{ _training_rendered_b64 }}"
    - name: What install.yml sends and what its look expects
      ansible.builtin.copy:
        content: "{{ {'wanted': (__training_files | verl.deploy.install_plan(_training_files, _training_modes, [])).wanted,
                       'files': __training_files} | to_json }}"
        dest: "{{ verl_output_dir }}/wanted.json"
        mode: "0644"
""" % REPO

COPY = """- name: The control script
  ansible.builtin.copy:
    src: verl_control.sh
    dest: "{{ verl_output_dir }}/localhost/verl_control.sh"
    mode: "0755"
- name: Its values
  ansible.builtin.copy:
    content: "{{ _verl_launch | verl.deploy.control_values }}"
    dest: "{{ verl_output_dir }}/localhost/verl_control.env"
    mode: "0644"
- name: The launch record
  ansible.builtin.copy:
    content: "{{ _training_launch_record | to_json }}\\n"
    dest: "{{ verl_output_dir }}/localhost/launch.json"
    mode: "0644"
- name: The collection's own Python the nodes run, as it is in module_utils
  ansible.builtin.copy:
    src: "%s/plugins/module_utils/{{ item }}"
    dest: "{{ verl_output_dir }}/localhost/{{ item }}"
    mode: "0644"
  loop: [_failures.py, _keep_alive.py, _npu_smi.py, _deploy_lock.py]
""" % REPO


def test_the_expected_checksums_are_those_of_the_rendered_scripts(tmp_path):
    (tmp_path / "play.yml").write_text(PLAY)
    (tmp_path / "copy.yml").write_text(COPY)
    # The debug runs outside the role: the play's own templates/ and files/ folders let its lookups find the role's
    # templates and files (start_verl.sh.j2 reads files/cann_env.sh).
    (tmp_path / "templates").symlink_to(REPO / "roles" / "training" / "templates")
    (tmp_path / "files").symlink_to(REPO / "roles" / "training" / "files")
    out = tmp_path / "out"
    argv = [ANSIBLE_PLAYBOOK, str(tmp_path / "play.yml"), "-e", "mask=1010000", "-e", "verl_model_path=/models/Qwen3-8B",
            "-e", "verl_train_file=/data/train.parquet", "-e", "verl_test_file=/data/test.parquet", "-e", "verl_ckpts_dir=/ckpt",
            "-e", "verl_output_dir=%s" % out]
    proc = subprocess.run(argv, cwd=REPO, env=dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="default",
                                                   ANSIBLE_CALLBACK_RESULT_FORMAT="json"),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    sent = json.loads((out / "wanted.json").read_text())
    wanted = sent["wanted"]
    names = [entry.split()[2] for entry in wanted]
    assert names == ["start_verl.sh", "run_training.sh", "verl_control.env", "verl_control.sh", "launch.json", "npu_sampler.py", "ray_members.py",
                     "_failures.py", "_keep_alive.py", "_npu_smi.py", "_deploy_lock.py"]
    # The container stage's look names each of them (else every re-run installs the one it missed again: not idempotent).
    look = re.search(r"look \. ([^|]*)\|", (REPO / "roles" / "container" / "files" / "npu_stack_check.sh").read_text()).group(1).split()
    assert [name for name in names if not any(fnmatch.fnmatch(name, pattern) for pattern in look)] == [], look
    # The NPU sampler is installed as the role holds it.
    sources = {name: REPO / "roles" / "training" / "files" / name for name in ("npu_sampler.py", "ray_members.py")}
    for entry in wanted:
        mode, digest, name = entry.split()
        assert mode == ("755" if name.endswith(".sh") else "644")
        written = (sources.get(name) or out / "localhost" / name).read_bytes()
        assert digest == hashlib.sha256(written).hexdigest(), name
        # The rendered files as install.yml carries them; the collection's own Python is added by install_plan.
        assert written == (base64.b64decode(sent["files"][name]) if name in sent["files"]
                           else (REPO / "plugins" / "module_utils" / name).read_bytes()), name
