# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""Drive verl.deploy.node_facts' main() on this machine: a fake npu-smi (a fixture), a stand-in Docker engine on a
unix socket (a small HTTP server answering the five reads), a stand-in Docker CLI for what runs in a container (`docker
exec`, as every step of the collection runs), and the real /proc, `ip` and /dev/shm."""
from __future__ import annotations

import json
import os
import shlex
import sys
import socketserver
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.verl.deploy.plugins.modules import node_facts
from ansible_collections.verl.deploy.plugins.module_utils import _node_facts as nf

FIXTURES = Path(__file__).resolve().parents[3] / 'fixtures' / 'npu-smi'
INFO_008 = FIXTURES / '008_info_910B3_2of8cards_v25.5.1_proc_VLLMEngineCore_trimmed.txt'
ERROR_8005 = FIXTURES / '019_error_dcmi_module_initialize_failed_-8005_container.txt'
INFO_8_CARDS = FIXTURES / '001_info_910ProB-as-910B_8cards_v24.1.0_noproc.txt'

ENGINE = {
    '/version': {'Version': '20.10.24'},
    '/containers/json?all=1': [{'Id': 'c1', 'Names': ['/verl'], 'Image': 'verl:1', 'Status': 'Up', 'State': 'running', 'Labels': {}},
                               {'Id': 'c2', 'Names': ['/old'], 'Image': 'x', 'Status': 'Exited (0)', 'State': 'exited'}],
    '/containers/c1/json': {'HostConfig': {'Devices': [{'PathOnHost': '/dev/davinci0'}], 'Privileged': False}},
    '/images/json': [{'Id': 'sha256:1', 'RepoTags': ['verl:1'], 'RepoDigests': [], 'Size': 5}],
    '/info': {'DockerRootDir': '/'},
}
# The container check's call as the last deploy's check kept it (roles/container/files/npu_stack_check.sh), and its answer.
RECORD = '/verl/.npu_stack_check.json'
KEPT_CALL = {'argv': ['bash', '-c', 'the check', 'npu-stack-check', '8'], 'env': {'VERL_LOOK_DIR': '/verl', 'VERL_MAX_PROMPT_LENGTH': '1024'}}
CHECK_OUT = json.dumps({"said": [], "answer": {"look": "", "raylet": "running", "stack": '{"first_op": {"held": [42]}}'}})
# What `docker exec c1 ARGV` answers (stdout, stderr, exit code); the training's read answers with a warning on stderr.
EXECS = {
    json.dumps(['bash', '/verl/verl_control.sh', 'training-state']): (
        '{"said": [], "answer": {"pid": "42", "started_at": "1700000000", "state": "finished"}}\n', 'a warning\n', 3),
    json.dumps(['cat', RECORD]): (json.dumps(KEPT_CALL) + '\n', '', 0),
    json.dumps(KEPT_CALL['argv']): (CHECK_OUT, '', 0),
}
# The Docker CLI's exec as it runs here: `-e NAME` takes NAME's value from the CLI's environment; each call logged.
DOCKER_CLI = r"""#!%(python)s
import json, os, sys
args = sys.argv[1:]
assert args[0] == "exec", args
args = args[1:]
env = []
while args[0] == "-e":
    env.append("%%s=%%s" %% (args[1], os.environ[args[1]]))
    args = args[2:]
container, argv = args[0], args[1:]
with open(%(log)r, "a") as log:
    log.write(json.dumps({"container": container, "argv": argv, "env": env or None}) + "\n")
if container != "c1":
    sys.exit("Error response from daemon: No such container: " + container)
out, err, rc = json.loads(%(answers)r).get(json.dumps(argv), ("", "%%s: no such file\n" %% argv[-1], 1))
sys.stdout.write(out)
sys.stderr.write(err)
sys.exit(rc)
"""


def seen_env(tmp_path):
    log = tmp_path / 'exec.log'
    return [json.loads(line)['env'] for line in log.read_text().splitlines()] if log.exists() else []


class _Engine(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the handler's name is fixed by http.server)
        body = ENGINE.get(self.path)
        self.send_response(200 if body is not None else 404)
        data = json.dumps(body if body is not None else {'message': 'no such path'}).encode()
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args):
        pass


@pytest.fixture(name='engine')
def fixture_engine(tmp_path, monkeypatch):
    cli = tmp_path / 'bin' / 'docker'
    cli.parent.mkdir()
    cli.write_text(DOCKER_CLI % {'python': sys.executable, 'log': str(tmp_path / 'exec.log'), 'answers': json.dumps(EXECS)})
    cli.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (cli.parent, os.environ['PATH']))
    path = str(tmp_path / 'docker.sock')
    server = socketserver.UnixStreamServer(path, _Engine)
    server.get_request = lambda: (server.socket.accept()[0], ('local', 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'unix://' + path
    server.shutdown()
    server.server_close()


def npu_smi(tmp_path, fixture, rc=0):
    script = tmp_path / 'npu-smi'
    script.write_text('#!/bin/sh\ncat %s\nexit %d\n' % (shlex.quote(str(fixture)), rc))
    script.chmod(0o755)
    return str(script)


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            node_facts.main()
    return json.loads(capsys.readouterr().out)


def test_one_call_reads_everything(capsys, tmp_path, engine):
    (tmp_path / 'models' / 'Qwen3-8B').mkdir(parents=True)
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine, 'head_address': '127.0.0.1',
                                 'paths': [str(tmp_path / 'models' / 'Qwen3-8B'), str(tmp_path / 'nope')],
                                 'model_search_paths': [str(tmp_path / 'models')], '_ansible_check_mode': True})
    assert result['changed'] is False
    assert result['npu']['failed'] is False and result['npu']['npu_ids'] and result['npu']['npu_smi_path'].endswith('npu-smi')
    docker = result['docker']
    assert docker['can_talk_to_docker'] and docker['server_version'] == '20.10.24'
    assert docker['containers'][0]['HostConfig']['Devices'] == [{'PathOnHost': '/dev/davinci0'}]
    assert docker['images'][0]['RepoTags'] == ['verl:1']
    assert docker['root_dir'] == '/' and 0 <= docker['root_free_bytes'] <= docker['root_size_bytes']  # Docker's data root, read on this host
    assert result['memory']['total_kb'] > 0 and result['memory']['available_kb'] > 0
    assert isinstance(result['port_holders'], dict)
    assert result['paths'][str(tmp_path / 'models' / 'Qwen3-8B')]['isdir'] and not result['paths'][str(tmp_path / 'nope')]['exists']
    assert result['found'] == {'models': [str(tmp_path / 'models' / 'Qwen3-8B')], 'datasets': []}
    assert result['shm']['exists'] and result['shm']['size_kb'] > 0
    assert isinstance(result['listening_ports'], list) and isinstance(result['device_holders'], list)
    network = result['network']
    assert 'lo' in network['interfaces'] and network['head_route']['ok'] is True and network['head_route']['dev'] == 'lo'
    assert result['ansible_facts']['ansible_interfaces'] == network['interfaces']
    assert result['ansible_facts']['ansible_default_ipv4'] == network['default_ipv4']
    assert result['hccn'] == {'path': '', 'devices': {}, 'conf': None}, 'no hccn devices given (a single-node run): nothing read'


def test_a_part_that_cannot_be_read_does_not_fail_the_others(capsys, tmp_path):
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, ERROR_8005, rc=0), 'docker_host': 'unix://%s/none.sock' % tmp_path})
    assert result.get('failed') is not True
    assert result['npu']['failed'] is True and result['npu']['dcmi_code'] == -8005 and '-8005' in result['npu']['msg']
    assert result['docker']['can_talk_to_docker'] is False and 'none.sock' in result['docker']['msg']
    assert result['network']['head_route']['ok'] is None, 'no head address given: the controller routes it later'


def test_a_missing_npu_smi_is_named(capsys, tmp_path):
    result = run_module(capsys, {'npu_smi_path': str(tmp_path / 'no-npu-smi'), 'docker': False})
    assert result['npu']['failed'] is True and 'verl_npu_smi_path' in result['npu']['msg']
    assert result['docker']['msg'] == 'not read (docker=false)'


def test_the_checkpoint_folder_and_the_data_sets_are_read_in_the_same_call(capsys, tmp_path):
    """verl_ckpts_dir (not there yet: read at its parent, nothing created), the model's size, the parquet footers."""
    from pathlib import Path

    model = tmp_path / 'Qwen3-8B'
    model.mkdir()
    real = Path(__file__).resolve().parents[3] / 'sim' / 'models' / 'Qwen3-8B' / 'config.json'
    (model / 'config.json').write_text(real.read_text())
    data = Path(__file__).resolve().parents[3] / 'fixtures' / 'parquet' / 'verl.parquet'
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, ERROR_8005, rc=0), 'docker': False,
                                 'ckpts_dir': str(tmp_path / 'ckpts' / 'run1'), 'model_path': str(model),
                                 'parquet_paths': [str(data), str(tmp_path / 'none.parquet')]})
    ckpts = result['ckpts']
    assert ckpts['read'] and not ckpts['exists'] and ckpts['existing'] == str(tmp_path) and ckpts['missing'] == 'ckpts/run1'
    assert not (tmp_path / 'ckpts').exists()
    assert ckpts['free_bytes'] > 0 and ckpts['storage']['boot_id'] and ckpts['storage']['fstype']
    # The model's one count is the model read's (no weight files here: config.json's shape), not a second one in ckpts.
    assert 'model_params' not in ckpts
    assert round(result['model']['parameters'] / 1e9, 2) == 8.19 and result['model']['parameters_from'] == 'config.json'
    assert result['parquet'][str(data)]['num_rows'] == 256
    assert result['parquet'][str(data)]['sample'] == {'rows': 256, 'data_sources': {'openai/gsm8k': 0}, 'empty_ground_truth': []}
    assert 'No such file' in result['parquet'][str(tmp_path / 'none.parquet')]['error']


def test_the_checkpoint_to_resume_from_is_read_in_the_same_call(capsys, tmp_path):
    """resume_from=auto: the folder the tracker names, its layout files (tests/unit/plugins/module_utils/test_resume.py
    lays them out as verl saves them)."""
    from tests.unit.plugins.module_utils.test_resume import save

    save(tmp_path / 'ckpts', step=4, tp=2, ranks=8)
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, ERROR_8005, rc=0), 'docker': False,
                                 'ckpts_dir': str(tmp_path / 'ckpts'), 'resume_from': 'auto'})
    resume = result['resume']
    assert resume['read'] and resume['step'] == 4 and resume['folder'] == str(tmp_path / 'ckpts' / 'global_step_4')
    assert resume['layout']['tensor_model_parallel_size'] == 2 and resume['ranks'] == 8
    assert resume['sharding'] == 'fully_sharded_model_space' and resume['model']['architecture'] == 'Qwen3ForCausalLM'
    assert run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, ERROR_8005, rc=0), 'docker': False,
                               'ckpts_dir': str(tmp_path / 'ckpts')})['resume'] == {'folder': '', 'step': None, 'read': False}


def test_a_listening_port_is_named_with_its_holder_and_an_engine_without_info_still_answers(capsys, tmp_path, engine):
    """The port this test listens on is held by this process (its fd links to the socket's inode); an engine that does not
    answer /info (its data root unknown) is still read."""
    import os
    import socket

    listener = socket.socket()
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    info = ENGINE.pop('/info')
    try:
        result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine})
    finally:
        ENGINE['/info'] = info
        listener.close()
    assert port in result['listening_ports']
    assert any(holder.startswith('%d (' % os.getpid()) for holder in result['port_holders'][str(port)]), result['port_holders']
    assert result['docker']['can_talk_to_docker'] and result['docker']['root_dir'] == '' and result['docker']['root_free_bytes'] is None


def fake_hccn_tool(tmp_path, stalls):
    """An hccn_tool that sleeps past the bound on its first `stalls` calls, then answers as the real one does."""
    script = tmp_path / 'hccn_tool'
    script.write_text('#!/bin/sh\ncalls=$(cat %(n)s 2>/dev/null || echo 0); echo $((calls + 1)) > %(n)s\n'
                      '[ "$calls" -lt %(stalls)d ] && exec sleep 30\necho "net health status: Success"\n'
                      % {'n': shlex.quote(str(tmp_path / 'calls')), 'stalls': stalls})
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize('stalls, answer, error', [
    (1, 'net health status: Success', ''),  # one stalled call on a loaded host is asked again
    (2, '', 'did not answer within 1 s, asked twice'),  # a tool that hangs is named
])
def test_an_hccn_tool_call_that_stalls_once_is_asked_again(monkeypatch, tmp_path, stalls, answer, error):
    monkeypatch.setattr(node_facts, 'HCCN_TOOL_SECONDS', 1)
    tool, hung = fake_hccn_tool(tmp_path, stalls), []
    out, err = node_facts._hccn_run(tool, 5, '-net_health', hung)
    assert out.strip() == answer and err.endswith(error) and (tmp_path / 'calls').read_text().strip() == str(min(stalls + 1, 2))
    # After a call that hung, the host's next calls are not made (the read stays bounded); after one stall they are.
    out, err = node_facts._hccn_run(tool, 6, '-net_health', hung)
    assert (out, err) == (('', hung[0]) if stalls == 2 else ('net health status: Success\n', ''))


def test_the_npus_after_one_whose_hccn_tool_hung_are_not_asked(monkeypatch, tmp_path):
    monkeypatch.setattr(node_facts, 'HCCN_TOOL_SECONDS', 1)
    monkeypatch.setattr(node_facts, 'device_view', lambda _npu: {'device_ids': [5, 6, 7]})
    tool = fake_hccn_tool(tmp_path, stalls=99)
    module = type('Module', (), {'get_bin_path': staticmethod(lambda _name: tool)})()
    devices = node_facts.read_hccn(module, {}, [5, 6, 7])['devices']
    assert devices['5']['error'].endswith('-i 5 -link -g` did not answer within 1 s, asked twice') and 'not_asked' not in devices['5']
    assert devices['6'] == devices['7'] == {'link': None, 'health': None, 'not_asked': True}
    assert (tmp_path / 'calls').read_text().strip() == '2', 'two calls in all: the hung one, asked twice'


def test_only_the_deploys_npus_are_asked_so_one_that_hangs_elsewhere_refuses_nothing(capsys, monkeypatch, tmp_path):
    """npu-smi lists NPUs 0-7, the deploy uses 4-7 (hccn=[4, 5, 6, 7], and 9, which npu-smi does not list); hccn_tool hangs on
    every other NPU, as it did on NPU 2 of a node that then refused to deploy. The deploy's NPUs are read, no other is asked."""
    # A bound no answering call comes near, also on a loaded machine (with 1 s, a call that stalled there was asked again,
    # one call more than the count below); an NPU that hangs is never asked, so it costs nothing.
    monkeypatch.setattr(node_facts, 'HCCN_TOOL_SECONDS', 10)
    calls = tmp_path / 'calls'
    tool = tmp_path / 'bin' / 'hccn_tool'
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\necho "$2" >> %s\ncase "$2" in 4|5|6|7) ;; *) exec sleep 30 ;; esac\ncase "$3" in\n'
                    '  -link) echo "link status: UP" ;;\n  -net_health) echo "net health status: Success" ;;\n'
                    '  -ip) printf "ipaddr:29.1.0.%%s\\nnetmask:255.255.0.0\\n" "$2" ;;\n'
                    '  -tls) echo "dev_id:$2, tls switch[0](0:disable, 1:enable), tls alarm time threshold[60]days" ;;\nesac\n'
                    % shlex.quote(str(calls)))
    tool.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (tool.parent, __import__('os').environ['PATH']))
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_8_CARDS), 'docker': False, 'hccn': [4, 5, 6, 7, 9]})
    assert result['npu']['npu_ids'] == list(range(8))
    hccn = result['hccn']
    assert hccn['path'] == str(tool)
    assert hccn['devices'] == {str(d): {'link': 'UP', 'health': 'Success', 'address': '29.1.0.%d' % d, 'netmask': '255.255.0.0',
                                        'tls': 'disabled'} for d in (4, 5, 6, 7)}, hccn['devices']
    # Four calls for each of the deploy's NPUs; none for NPUs 0-3 (they would hang) or 9 (npu-smi does not list it).
    assert sorted(calls.read_text().split()) == sorted(['4', '5', '6', '7'] * 4)


TRAINING = {'container': 'verl', 'workdir': '/verl/'}


def test_the_training_in_the_running_container_is_read_in_the_same_call(capsys, tmp_path, engine):
    """The head's training (the drift check's read) as `docker exec` would give it, read as node_step reads it: stdout apart
    from stderr, one document (its state decided here, never a state it says); a container
    that does not run, or an engine that does not answer, runs nothing and reads as unknown."""
    found = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine, 'training': TRAINING})['training']
    assert (found['state'], found['pid'], found['started_at'], found['launch']) == ('running', '42', '1700000000', None), found
    stopped = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine,
                                  'training': dict(TRAINING, container='old')})['training']
    unread = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': 'unix://%s/none.sock' % tmp_path,
                                 'training': TRAINING})['training']
    assert stopped['state'] == unread['state'] == 'unknown', (stopped, unread)
    assert run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker': False})['training'] == {}


def test_the_container_check_the_last_deploy_kept_is_run_again_without_its_npu_operation(capsys, monkeypatch, tmp_path, engine):
    """While the container's training holds NPUs, the pre-check runs the call the container stage's check kept in the
    container, in its environment and with VERL_CHECK_NO_NPU_OP, and answers with the call's digest (the stage compares it
    with its own call); without a record, without the container running, or with no NPU held by it, nothing runs."""
    holders = [{'device': '/dev/davinci0', 'pid': 42, 'name': 'python3', 'container_id': 'c1'}]
    monkeypatch.setattr(node_facts, 'read_holders', lambda _processes: holders)
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine,
                                 'container_check': {'container': 'verl', 'workdir': '/verl'}})['container_check']
    assert result == {'container': 'verl', 'record': nf.call_digest(KEPT_CALL), 'rc': 0, 'stdout': CHECK_OUT, 'stderr': ''}, result
    assert seen_env(tmp_path) == [None, ['VERL_CHECK_NO_NPU_OP=1', 'VERL_LOOK_DIR=/verl', 'VERL_MAX_PROMPT_LENGTH=1024']]
    missing = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine,
                                  'container_check': {'container': 'verl', 'workdir': '/none'}})['container_check']
    assert missing['rc'] is None and missing['record'] == '' and missing['msg'].startswith('not run'), missing
    stopped = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine,
                                  'container_check': {'container': 'old', 'workdir': '/verl'}})['container_check']
    assert stopped['rc'] is None and stopped['msg'] == 'not run: no process of the container old holds an NPU', stopped
    holders[0]['container_id'] = 'another'
    free = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, INFO_008), 'docker_host': engine,
                               'container_check': {'container': 'verl', 'workdir': '/verl'}})['container_check']
    assert free['rc'] is None and free['msg'] == 'not run: no process of the container verl holds an NPU', free
    assert len(seen_env(tmp_path)) == 3, 'after the first read, only the missing record was asked for'


def test_the_last_training_is_read_with_the_checkpoint_folder_in_the_same_call(capsys, tmp_path):
    state, ckpts = tmp_path / 'logs' / '.verl-deploy', tmp_path / 'ckpts'
    state.mkdir(parents=True)
    (state / 'last_step').write_text('1700000000 716\n')
    (ckpts / 'global_step_700').mkdir(parents=True)
    result = run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, ERROR_8005, rc=0), 'docker': False,
                                 'ckpts_dir': str(ckpts), 'state_dir': str(state)})
    look = result['last_training']
    assert (look['last_step'], look['exists'], look['checkpoints'], look['mountpoint']) == ('1700000000 716', 'yes', 1, 'no'), look
    assert run_module(capsys, {'npu_smi_path': npu_smi(tmp_path, ERROR_8005, rc=0), 'docker': False})['last_training'] == {}
