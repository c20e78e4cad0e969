"""The mask comparison's decisions: the masks argument, refusals, verl's step lines, failures, the table and the winner,
the report files, resume, and the command line of the deploys it runs."""
from __future__ import annotations

import json
import re

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare


@pytest.mark.parametrize("value, expected", [
    ("0000000,1100000", ["0000000", "1100000"]),
    (" 0000000 , 1100000,0000000", ["0000000", "1100000"]),  # each once, in order
    (["1100100", "0000000"], ["1100100", "0000000"]),
    (4096, ["0010000"]),  # YAML 1.1 / an AWX answer read 0010000 as octal: the mask it was
    ("each", ["0000000", "1000000", "0100000", "0010000", "0001000", "0000100", "0000010", "0000001"]),
    ("1100000,EACH", ["1100000", "0000000", "1000000", "0100000", "0010000", "0001000", "0000100", "0000010", "0000001"]),
])
def test_the_masks_argument(value, expected):
    assert [mask for mask, _origin in compare.parse_masks(value)] == expected


def test_allowed_is_every_mask_once():
    masks = compare.parse_masks("allowed")
    assert len(masks) == 128 and {origin for _m, origin in masks} == {"allowed"} and masks[0][0] == "0000000"


@pytest.mark.parametrize("value, named", [
    ("0000000,110000,x", "110000, x are neither"),
    ("0000002", "0000002 is neither"),
    ("0000000,,1100000", "'' is neither"),
    ("", "masks is not given"),
    (None, "masks is not given"),
    (True, "masks is not given"),
])
def test_a_bad_masks_argument_is_named_with_the_fix(value, named):
    with pytest.raises(compare.CompareError) as error:
        compare.parse_masks(value)
    assert named in str(error.value)
    assert "-e masks=0000000,1100000,1100100" in str(error.value)


def test_a_problem_every_mask_has_is_the_settings_own():
    common, own = compare.split_refusals({"0000000": ["model missing"], "0000001": ["model missing", "VPP needs PP"]})
    assert common == ["model missing"] and own == {"0000000": [], "0000001": ["VPP needs PP"]}


def test_the_plan_refuses_resumes_and_runs():
    masks = [("0000000", "given"), ("0000001", "given"), ("1100000", "given")] + [("0000011", "allowed")]
    rows = compare.plan(masks, {"0000001": ["VPP needs PP >= 2"], "0000011": ["VPP needs PP >= 2"]}, {"0000000"})
    assert [(r["mask"], r["action"]) for r in rows] == [("0000000", "measured"), ("0000001", "refused"), ("1100000", "run")]
    assert rows[1]["reasons"] == ["VPP needs PP >= 2"] and rows[2]["features"] == "RmvPad+DynBSZ"
    assert compare.features_on("0000000") == "none"


def test_a_mask_that_failed_is_trained_again_only_when_asked_and_the_plan_says_which():
    rows = compare.plan([("0000000", "given"), ("1100000", "given"), ("1100100", "given"), ("0000001", "given")],
                        {"0000001": ["VPP needs PP >= 2"]}, set())
    results = {"0000000": {"status": "measured"}, "1100000": {"status": "failed", "failure": {"phase": "update_actor"}},
               "0000001": {"status": "refused"}, "1100100": {"status": "refused", "reasons": ["The settings of node1 need fixing"]}}
    assert compare.to_run(rows, results) == []
    assert compare.to_run(rows, results, retry_failed=True) == ["1100000"]  # 1100100 was refused on the nodes: never trained
    assert compare.to_run(rows, {}) == ["0000000", "1100000", "1100100"]
    lines = compare.plan_lines(rows, results)
    assert lines[0] == "0000000 (none): measured already (resumed: not trained again)"
    assert lines[1] == ("1100000 (RmvPad+DynBSZ): failed in the earlier run (in update_actor): not trained again; "
                        "-e verl_compare_retry_failed=true trains the failed masks again and keeps those measured")
    assert lines[2] == ("1100100 (RmvPad+DynBSZ+Recompute): refused by the settings check on the nodes in the earlier run, not "
                        "trained: The settings of node1 need fixing")
    assert lines[3].startswith("0000001 (VPP): refused by the settings, not trained: ")
    assert compare.plan_lines(rows, results, True)[1] == (
        "1100000 (RmvPad+DynBSZ): failed in the earlier run (in update_actor): trained again (verl_compare_retry_failed=true)")


# verl 0.7.0's console line (verl/utils/logger/aggregate_logger.py: "step:N - key:value - ..."), as Ray prints a
# TaskRunner's output, with numpy 2's scalars as pprint.pformat shows them.
LOG = (
    '(TaskRunner pid=4242) Training Progress:   0%|          | 0/3\n'
    '(TaskRunner pid=4242) step:1 - timing_s/gen:30.0 - timing_s/update_actor:20.0 - '
    'timing_s/step:60.0 - perf/throughput:500.0 - perf/max_memory_allocated_gb:40.0 - '
    'perf/max_memory_reserved_gb:44.0\n'
    '(TaskRunner pid=4242) step:2 - timing_s/gen:10.0 - timing_s/update_actor:8.0 - timing_s/step:20.0 - '
    'perf/throughput:np.float64(1500.0) - perf/max_memory_allocated_gb:41.0 - '
    'perf/max_memory_reserved_gb:45.5 - actor/entropy:nan\n'
    'step:3 - timing_s/gen:12.0 - timing_s/update_actor:9.0 - timing_s/step:24.0 - '
    'perf/throughput:1250.0 - perf/max_memory_allocated_gb:41.0 - perf/max_memory_reserved_gb:45.0\n'
    'step:4 - timing_s/gen:11.0 - timing_s/update_actor:8.5 - timing_s/step:22.0 - '
    'perf/throughput:1360.0 - perf/max_memory_allocated_gb:41.0 - perf/max_memory_reserved_gb:45.0\n'
)


def test_verls_step_lines_are_read():
    steps = compare.parse_steps(LOG)
    assert [s["step"] for s in steps] == [1, 2, 3, 4]
    assert steps[1]["perf/throughput"] == 1500.0 and "actor/entropy" not in steps[1]  # nan is no figure
    assert compare.parse_steps("step:2 - timing_s/step:5\nstep:2 - timing_s/step:6\n") == [{"step": 2, "timing_s/step": 6.0}]


def test_the_warm_up_is_left_out_the_median_and_the_peak_kept():
    summary = compare.summarize(compare.parse_steps(LOG), warmup=1)
    assert summary["timing_s/step"] == {"value": 22.0, "min": 20.0, "max": 24.0, "n": 3}
    assert summary["perf/max_memory_reserved_gb"]["value"] == 45.5  # a peak: the highest, not the median
    assert compare.summarize(compare.parse_steps(LOG), warmup=9)["timing_s/step"]["n"] == 4  # nothing past it: all


def test_a_finished_run_with_every_step_is_measured():
    record = compare.measure("1100000", LOG, 1, 4, "finished")
    assert record["status"] == "measured" and record["steps"] == 4 and "failure" not in record


# The real failure's text: verl issue 6768 (an Ascend training failing in the actor update, Ray's RayTaskError of
# WorkerDict.actor_rollout_update_actor) and vllm-ascend issue 19 (torch_npu's "NPU out of memory" line).
OOM = LOG.split("step:3", maxsplit=1)[0] + """(TaskRunner pid=4242) Traceback (most recent call last):
  File "verl/trainer/ppo/ray_trainer.py", line 1196, in _update_actor
    actor_output = self.actor_rollout_wg.update_actor(batch)
ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_update_actor() (pid=4926, ip=172.36.2.24, actor_id=e536066fcce7cd73767503ac02000000)
RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity; 10.24 GiB already allocated; \
10.24 GiB current active; 19.52 MiB free; 10.65 GiB reserved in total by PyTorch)
"""


@pytest.mark.parametrize("text, outcome, phase, line", [
    (OOM, "crashed", "update_actor", "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB"),
    ("ValueError: Total available GPUs 8 is less than total desired GPUs 16\n", "crashed", "before step 1",
     "ValueError: Total available GPUs 8"),
    (LOG.split("step:3", maxsplit=1)[0] + "ray::WorkerDict.actor_rollout_generate_sequences() failed\nRuntimeError: EZ9999 op failed\n",
     "crashed", "gen", "RuntimeError: EZ9999"),
    (LOG.split("step:3", maxsplit=1)[0], "timeout", "timeout (after step 2)", ""),
    (LOG.split("step:3", maxsplit=1)[0], "finished", "after step 2", "the training ended after 2 of 4 step(s) without an error line"),
])
def test_a_failed_run_is_recorded_with_its_phase_and_error_line(text, outcome, phase, line):
    record = compare.measure("0000000", text, 1, 4, outcome)
    assert record["status"] == "failed"
    assert record["failure"]["phase"] == phase
    assert record["failure"]["line"].startswith(line)


def test_a_deploy_that_stopped_is_recorded_with_its_last_words():
    record = compare.measure("0000000", "", 1, 3, "deploy-failed", "Ray did not form")
    assert record["failure"] == {"phase": "deploy", "line": "Ray did not form", "oom": False}


@pytest.mark.parametrize("result, task, words", [
    # Ansible's result of a task past its timeout keyword (the deploy's: verl_compare_timeout).
    ({"failed": True, "timedout": {"frame": "...", "period": 1800}, "msg": "The task timed out."}, "Run deploy.yml (mask 0000000)",
     "the deploy did not end within verl_compare_timeout=1800 s. Fix: raise verl_compare_timeout"),
    # Any other step: named, with its own message (before, every failure was said to be the timeout).
    ({"failed": True, "msg": "Destination directory /out does not exist"}, "Keep the deploy's output (mask 0000000)",
     "Keep the deploy's output (mask 0000000) failed: Destination directory /out does not exist"),
    ({"failed": True, "timedout": None, "msg": "a\n  b"}, "", "a step of its run failed: a b"),
    (None, "", "a step of its run failed: no message"),
])
def test_a_run_that_failed_says_whether_it_was_the_timeout_or_which_step(result, task, words):
    text = compare.rescued(result, task, 1800)
    assert text.startswith(words), text
    assert ("verl_compare_timeout" in text) is bool((result or {}).get("timedout")), text
    assert compare.measure("0000000", "", 1, 3, "deploy-failed", text)["failure"]["line"] == text


# deploy.yml's settings check on a node (validate.yml), which knows the model's layers: VPP with PP 4 and 36 layers.
NODE_REFUSAL = """TASK [verl.deploy.verl : Name every setting of this host that needs fixing, with its fix] ***
ok: [node1] =>
    msg: |-
        1 setting(s) need fixing:
        - VPP (bit 6) splits the model's 36 layers into verl_train_pp x 2 = 8 chunks, which does not divide evenly. Fix: use verl_train_pp=2 or 3.

TASK [verl.deploy.verl : Stop when a setting of this host needs fixing] ***
[ERROR]: Task failed: Action failed: The settings of node1 need fixing: each is named above with its fix.
"""


def test_a_mask_the_settings_check_on_the_nodes_refuses_is_listed_as_refused():
    words = compare.last_words(NODE_REFUSAL)
    assert words == ("The settings of node1 need fixing: each is named above with its fix. 1 setting(s) need fixing: - VPP (bit 6) "
                     "splits the model's 36 layers into verl_train_pp x 2 = 8 chunks, which does not divide evenly. Fix: use "
                     "verl_train_pp=2 or 3.")
    record = compare.measure("1101101", "", 1, 3, "deploy-failed", words)
    assert record["status"] == "refused" and "VPP (bit 6)" in record["reasons"][0]
    assert compare.record_line(record).startswith("1101101 (RmvPad+DynBSZ+PfxCache+Recompute+VPP): refused by the settings check")
    rows = compare.plan([("1101101", "given")], {}, set())
    row = compare.report(rows, {"1101101": record})["rows"][0]
    assert row["status"] == "refused" and "VPP (bit 6)" in row["reasons"][0]


def _results():
    fast = LOG.replace("timing_s/step:2", "timing_s/step:1")  # 10.0, 12.0, 14.0 -> median 12 (vs 22)
    return {"0000000": compare.measure("0000000", LOG, 1, 4, "finished"),
            "1100100": compare.measure("1100100", fast, 1, 4, "finished"),
            "1100000": compare.measure("1100000", OOM, 1, 4, "crashed")}


ROWS = compare.plan([("0000000", "given"), ("1100000", "given"), ("1100100", "given"), ("0000001", "given"),
                     ("0000010", "given")], {"0000001": ["VPP needs PP >= 2"]}, set())


def test_the_table_and_the_winner():
    result = compare.report(ROWS, _results())
    assert result["winner"] == "1100100" and result["baseline"] == "0000000"
    assert result["verdict"] == "fastest that fits: 1100100 (RmvPad+DynBSZ+Recompute), 1.83x of 0000000"
    by_mask = {r["mask"]: r for r in result["rows"]}
    assert [by_mask[m]["status"] for m in ("0000000", "1100000", "1100100", "0000001", "0000010")] == [
        "measured", "failed", "measured", "refused", "not run"]
    assert by_mask["1100000"]["vs_baseline"] is None  # an out-of-memory run does not fit
    assert by_mask["0000000"]["vs_baseline"] == 1.0


def test_nothing_measured_says_so():
    assert compare.report(ROWS, {})["verdict"].startswith("no mask was measured")


def test_the_report_files_name_the_winner():
    result = compare.report(ROWS, _results())
    text = compare.markdown(result, "verl mask comparison")
    assert "**fastest that fits: 1100100" in text and "| 1100100 (winner) |" in text
    assert "refused: VPP needs PP >= 2" in text and "failed in update_actor: RuntimeError: NPU out of memory" in text
    assert json.loads(compare.to_json(result, "t", {"steps": 4}))["winner"] == "1100100"
    page = compare.to_html(result, "verl mask comparison")
    assert page.count("<svg") == 2 and "fastest that fits: 1100100" in page
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)|<script|<link", page)  # self-contained


def test_resume_keeps_what_was_measured_of_the_same_settings_and_the_lock_of_any():
    results = _results()
    lock = {"token": "c1:11:5", "holder": "the mask comparison (compare.yml) of controller c1 pid 11", "host": "c1", "pid": 11,
            "env": ["env", "VERL_DEPLOY_LOCK_TOKEN=c1:11:5"], "lease": 1920}
    kept = {"token": "c1:11:5", "holder": lock["holder"], "host": "c1", "pid": 11}  # what resuming needs, no more
    text = compare.save_state(results, "fp", "running", lock)
    assert compare.load_state(text, "fp") == {"results": json.loads(text)["results"], "user_training": "running", "user_read": None,
                                              "lock": kept, "note": ""}
    assert compare.load_state(text, "other") == {  # other settings start over, the cluster's lock and training are still that run's
        "results": {}, "user_training": "running", "user_read": None, "lock": kept,
        "note": "The state file holds a comparison of other settings; this one starts over."}
    assert compare.load_state(compare.save_state(results, "fp"), "fp")["lock"] is None
    assert compare.load_state("{not json", "fp")["note"].startswith("The state file cannot be read")
    assert compare.load_state("", "fp") == {"results": {}, "user_training": None, "user_read": None, "lock": None, "note": ""}


def test_the_fingerprint_leaves_out_the_mask_and_the_comparisons_own_settings():
    a = compare.fingerprint({"verl_train_tp": 4, "mask": "0000000", "verl_compare_steps": 3, "verl_restart": True})
    assert a == compare.fingerprint({"verl_train_tp": 4, "mask": "1100000", "verl_compare_steps": 5})
    assert a != compare.fingerprint({"verl_train_tp": 2})


CLI = {"inventory": ("/inv/hosts.yml",), "extra_vars": ("masks=0000000,1100000", "@/run/env/extravars"), "remote_user": "root",
       "private_key_file": "/k", "become": True, "become_method": "sudo", "forks": 5, "vault_password_files": ("/v",),
       "ask_pass": False, "subset": None, "timeout": None}


def test_a_deploy_gets_this_runs_inventory_options_and_extra_vars_then_the_comparisons():
    argv = compare.deploy_argv(CLI, "/venv/bin/python3", "/c/playbooks/deploy.yml", (), ["/tmp/m.json"])
    assert argv == ["/venv/bin/python3", "-m", "ansible.cli.playbook", "-i", "/inv/hosts.yml", "--user", "root",
                    "--private-key", "/k", "--become-method", "sudo", "--become", "--vault-password-file", "/v",
                    "-e", "masks=0000000,1100000", "-e", "@/run/env/extravars", "-e", "@/tmp/m.json", "/c/playbooks/deploy.yml"]
    assert compare.deploy_argv({}, "py", "d.yml", ["/i"], [])[3:5] == ["-i", "/i"]


def test_passwords_asked_on_a_terminal_cannot_be_given_to_the_deploys():
    assert compare.cli_problems(CLI) == []
    assert "--ask-pass, --ask-become-pass" in compare.cli_problems(dict(CLI, ask_pass=True, become_ask_pass=True))[0]


# ansible-core 2.19's output of a failed deploy (the pre-check's refusal, its problems printed in the task before).
REFUSED = """TASK [verl.deploy.precheck : Name every problem of this host, with its fix] ****
ok: [node1] =>
    msg: |-
        node1: 2 problem(s):
        - npu-smi failed: npu-smi not found. Fix: set verl_npu_smi_path.
        - verl_model_path=/models/Qwen3-8B is not an existing directory on this host. Fix: give the path.

TASK [verl.deploy.precheck : Check the NPUs] ***
[ERROR]: Task failed: Action failed: node1: 2 problem(s), each named above with its fix.
Origin: /c/roles/precheck/tasks/checks.yml:45:3

fatal: [node1]: FAILED! =>
    changed: false
    msg: 'node1: 2 problem(s), each named above with its fix.'
"""


@pytest.mark.parametrize("output, words", [
    (REFUSED, "node1: 2 problem(s), each named above with its fix. node1: 2 problem(s): - npu-smi failed: npu-smi not found. "
              "Fix: set verl_npu_smi_path. - verl_model_path=/models/Qwen3-8B is not an existing directory on this host. Fix: give the path."),
    ('TASK [x]\nfatal: [node1]: FAILED! => {"changed": false, "msg": "Ray did not form"}\nPLAY RECAP', "Ray did not form"),
    ("fatal: [node1]: FAILED! =>\n    changed: false\n    msg: 'the image pull timed out'\n", "the image pull timed out"),
    ("a\nERROR! the playbook: x could not be found\n", "ERROR! the playbook: x could not be found"),
    ("", "no output"),
    # The short report (verl.deploy.report): its FAILED line, not the result line after it.
    ("[1/8] Every node answers and is read: ok on 1 (1 s)\nFAILED on node1: Task failed: TP (tensor_model_parallel_size): 8 in the "
     "checkpoint, 4 now (verl_train_tp)\n[2/8] Check the settings: FAILED on node1 (1 s)\nResult: 1 host(s), FAILED on node1 (2 s).",
     "TP (tensor_model_parallel_size): 8 in the checkpoint, 4 now (verl_train_tp)"),
])
def test_the_last_words_of_a_deploy(output, words):
    assert compare.last_words(output) == words


def test_the_smoke_launchs_one_mask_is_checked_in_the_masks_own_words():
    assert compare.single_mask("1100000") == [("1100000", "given")]
    assert compare.single_mask(1100000) == [("1100000", "given")]  # YAML read it as a number
    with pytest.raises(compare.CompareError, match=r"mask='11x0000' .*Fix: give seven characters.*mask=0000000") as error:
        compare.single_mask("11x0000")
    assert "masks=" not in str(error.value) and "shorthand" not in str(error.value)
