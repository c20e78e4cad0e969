"""The failure table and the first failure (plugins/module_utils/_failures.py), on the real texts of public reports.

Each row of SIGNATURES has its report's lines here, pasted as the report shows them (a few lines, cut where the
report's excerpt ends); the report's id is the key's comment and the row's `source`. The healthy lines are real
lines of trainings that went on (vLLM's harmless import warnings, torch_npu's HCCL watchdog warning, verl's steps).
"""
from __future__ import annotations

import calendar

import pytest
import settings_table

from ansible_collections.verl.deploy.plugins.module_utils import _failures as fl

REAL = {
    # vllm-ascend#1443 (Qwen32B, TP=8 PP=3): torch_npu's wrapper line, then CANN's text
    "hccl_notify_timeout": [
        "(train pid=8464) RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU "
        "function error: AclrtSynchronizeDeviceWithTimeout, error code is 507048",
        "(train pid=8464) [ERROR] 2025-06-25-10:45:23 (PID:13075, Device:0, RankID:8) ERR00100 PTA call acl api failed",
        "(train pid=8464) [Error]: The execution of the internal task times out. ",
        "(train pid=8464) EI0002: [PID: 13075] 2025-06-25-10:45:23.586.187 The wait execution of the Notify register "
        "times out. Reason: The Notify register has not received the Notify record from remote rank: [unknown]. base "
        "information: [streamID:[1], taskID[8318285], tag[AllReduce_group_name_710], A",
    ],
    # vllm-ascend#486 (GRPO with co-located vLLM), vllm-ascend#1955 (the plog's own line)
    "hccl_socket_timeout": [
        "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
        "HcclAllreduce, error code is 6",
        "[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.",
        "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did "
        "not send the data in time. Please check the reason for the rank being stuck",
        "[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait]"
        "[LinkEstablish]wait socket establish timeout, role[1] rank[12] timeout[120]",
    ],
    # verl#849 (Ascend 910B quickstart), as its title quotes the worker's line
    "c10d_store_timeout": [
        "WorkerDict pid=904548) [E331 20:50:12.688969421 socket.cpp:1011] [c10d] The client socket has timed out after "
        "1800000ms while trying to connect to (10.123.x.x, 38321)",
    ],
    # vllm-ascend#8186 (310P, CANN's error text of a lost device)
    "npu_lost": [
        "[PID: 389] 2026-05-01-10:59:14.702.326 Device_Absent/Abnormal(EL0001): Device not found or invalid.",
        "        Possible Cause: Device does not exist or is abnormal.",
        "        Device[1] lost heartbeat.[FUNC:SyncTask][FILE:direct_hwts_engine.cc][LINE:407]",
        "        rtDeviceSynchronizeWithTimeout execution failed, reason=lost heartbeat[FUNC:FuncErrorReason]"
        "[FILE:error_message_manage.cc][LINE:65]",
    ],
    # failure_scan's own lines (npu_health_lines, from npu-smi's real tables in test_failure_scan.py): a card in Alarm, as
    # npu-smi showed the card of vllm-ascend#11171 that lost its heartbeat, and vllm-ascend#2698's dcmi error
    "npu_health": [
        "NPU 3 (910B3) Health: Alarm",
        "dcmi module initialize failed. ret is -8005",
    ],
    # ray#23450 (dmesg of a node whose Ray worker the kernel killed)
    "host_oom_kernel": [
        "[ 7248.743169] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
        "task_memcg=/user.slice,task=ray::_shuffle_m,pid=16832,uid=1000",
        "[ 7248.743279] Out of memory: Killed process 16832 (ray::_shuffle_m) total-vm:33905928kB, anon-rss:6481792kB, "
        "file-rss:0kB, shmem-rss:64kB",
        "[ 7249.003433] oom_reaper: reaped process 16832 (ray::_shuffle_m), now anon-rss:0kB, file-rss:0kB, shmem-rss:64kB",
    ],
    # verl#2950 (DAPO CPU OOM), EasyR1#185 (the raylet's line the driver shows)
    "host_oom_ray": [
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        "Memory on the node (IP: 10.20.49.141, ID: 4748aa6d1bc114b8bf58822d0b162796a1d36a79dee5c167c9bf91f5) where the "
        "task (actor ID: 9e43ace6a1234e13df7b456b01000000, name=8szhVkWorkerDict_0:3:WorkerDict.__init__, pid=4100606, "
        "memory used=56.57GB) was running was 246.41GB / 251.54GB (0.979583), which exceeds the memory usage threshold "
        "of 0.95.",
        "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / actors) "
        "killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
        "351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, IP: 10.95.143.76) over the last time period.",
    ],
    # vllm-ascend#1127 (DeepSeek-R1 W8A8 on 2x8 910B2), vllm-ascend#19
    "npu_oom": [
        "(NPURayWorkerWrapper pid=45464) ERROR 06-09 06:57:48 worker_base.py:581] RuntimeError: NPU out of memory. Tried "
        "to allocate 30.00 MiB (NPU 3; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current active; "
        "14.24 MiB free; 60.60 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
        "max_split_size_mb to avoid fragmentation. [repeated 6x across cluster]",
        "RuntimeError: NPU out of memory. Tried to allocate 22.00 MiB (NPU 0; 60.97 GiB total capacity; 10.24 GiB "
        "already allocated; 10.24 GiB current active; 19.52 MiB free; 10.65 GiB reserved in total by PyTorch) If "
        "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.",
    ],
    # opendatalab/MinerU#2258 (Atlas 910B with numpy 2), vllm-ascend#1875 ("the CANN required numpy < 2.0.0")
    "numpy2_tbe": [
        "2025-04-16 13:15:44.054 | ERROR    | magic_pdf.tools.cli:parse_doc:134 - Initialize:build/CMakeFiles/torch_npu."
        "dir/compiler_depend.ts:217 NPU function error: at_npu::native::AclSetCompileopt(aclCompileOpt::"
        "ACL_PRECISION_MODE, precision_mode), error code is 500001",
        "EC0010: 2025-04-16-13:15:44.018.468 Failed to import Python module [AttributeError: `np.float_` was removed in "
        "the NumPy 2.0 release. Use `np.float64` instead..].",
    ],
    # verl#1080 (an override of a key verl renamed)
    "hydra_config": [
        "hydra.errors.ConfigCompositionException: Could not override 'actor_rollout_ref.actor.fsdp_config.grad_offload'."
        " To append to your config use +actor_rollout_ref.actor.fsdp_config.grad_offload=False",
    ],
    # vllm-ascend#1209, vllm-ascend#5497, vllm#21226 (their titles: the exception lines)
    # verl#6931 (NPU, verl 0.8.0.dev, Qwen3.5 with Megatron-Bridge): verl/models/mcore/bridge.py's print, then the error
    "weight_bridge": [
        "Megatron-Bridge package not found. Please install Megatron-Bridge with `pip install megatron-bridge`",
        "ModuleNotFoundError: No module named 'megatron.bridge'",
    ],
    # vllm#36217 (Qwen3.5 with a transformers before it), as vLLM's engine arguments wrap it
    "model_type_unknown": [
        "(APIServer pid=50) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "(APIServer pid=50)   Value error, The checkpoint you are trying to load has model type `qwen3_5` but Transformers does not "
        "recognize this architecture. This could be because of an issue with the checkpoint, or because your version of "
        "Transformers is out of date.",
    ],
    "import_error": [
        "ModuleNotFoundError: No module named 'vllm_ascend.distributed'",
        "ImportError: cannot import name 'LLM' from 'vllm' (unknown location)",
        "ImportError: vllm/_C.abi3.so: undefined symbol _ZN3c106ivalue14ConstantString6createENSt7",
    ],
    # vllm-ascend#19 (vLLM's workers terminated, then their TBE compilers)
    "tbe_subprocess_gone": [
        "INFO 03-06 01:17:37 multiproc_worker_utils.py:139] Terminating local vLLM worker processes",
        "[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!",
        "[ERROR] TBE Subprocess[task_distribute] raise error[], main process disappeared!",
    ],
    # Search-R1#44 (verl's trainer retried by Ray); verl#439 (the maintainers: "a secondary error")
    "placement_group_exists": [
        "ray.exceptions.RayTaskError(RaySystemError): ray::main_task() (pid=51548, ip=10.110.199.11)",
        "ray.exceptions.RaySystemError: System error: Failed to create placement group "
        "'d1c0110401ccaefbbf8fd4b69bfd01000000' because name 'global_poolverl_group_8:0' already exists.",
    ],
    # verl#472 (the raylet's line and Hydra's after it), verl#4921
    "worker_killed": [
        "A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, "
        "check the logs for the dead worker. RayTask ID: ffffffffffffffff308b51161c6df986f5e8ce0502000000 Worker ID: "
        "ecb9585c3a722865f339a86d7d9ae9abb131b502d1452edadee7b0e3 Node ID: "
        "ed9580448251cc916430246358f4b61106db8cf2a06ff38a04a51eb1 Worker IP address: 10.0.0.1 Worker port: 10074 Worker "
        "PID: 27499 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error "
        "code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer "
        "due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV "
        "or other unexpected errors.",
        "Error executing job with overrides: ['algorithm.adv_estimator=grpo......trainer.total_epochs=1']",
    ],
    # verl#2189 (the driver's view of a dead WorkerDict)
    "actor_died": [
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
        "        class_name: create_colocated_worker_cls.<locals>.WorkerDict",
        "        actor_id: 9afdd2e3ddd8a5f428b8254501000000",
    ],
    # verl#2189
    "ray_task_error": [
        "ray.exceptions.RayTaskError(ActorDiedError): ray::TaskRunner.run() (pid=121540, ip=33.103.193.204, "
        "actor_id=fc6d13134659af4c1c7165ee01000000, repr=<main_ppo.TaskRunner object at 0x7edc6a269660>)",
        '  File "/home/hanling.lh/verl/verl/trainer/main_ppo.py", line 190, in run',
        "    trainer.fit()",
    ],
    # vllm-ascend#19 (the error before its TBE lines)
    "python_error": [
        "json.decoder.JSONDecodeError: Extra data: line 731 column 1 (char 60338)",
    ],
}
HEALTHY = [
    # vLLM's import warnings that every vllm-ascend run prints (vllm-ascend#19, gpustack#2547, vllm-ascend#703)
    "WARNING 03-06 01:16:47 _custom_ops.py:19] Failed to import from vllm._C with ModuleNotFoundError(\"No module "
    "named 'vllm._C'\")",
    "WARNING 07-18 09:55:29 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('/root/.local/share/"
    "pipx/venvs/vllm/lib/python3.11/site-packages/vllm/_C.abi3.so: undefined symbol: _ZN3c108ListType3getERKNSt7__"
    "cxx1112basic_stringIcSt11char_traitsIcESaIcEEENS_4Type24SingletonOrSharedTypePtrIS9_EE')",
    "ERROR 04-28 16:10:09 camem.py:69] Failed to import vllm_ascend_C:No module named 'vllm_ascend.vllm_ascend_C'",
    # torch_npu's watchdog warning (vllm-ascend#1127)
    "(NPURayWorkerWrapper pid=44419) [rank7]:[W609 06:57:47.819535026 compiler_depend.ts:877] Warning: The HCCL "
    "execution timeout was set to never timeout, so it is bigger than watchdog timeout 1800000ms which is set by "
    "init_process_group! The plog may not be recorded. You can disable watchdog by 'export "
    "HCCL_ASYNC_ERROR_HANDLING=0'. (function ProcessGroupHCCL) [repeated 26x across cluster]",
    # verl's own lines (verl#439, verl#2060, ray#51149)
    "(WorkerDict pid=318460) After building vllm rollout, memory allocated (GB): 32.68087673187256, memory reserved "
    "(GB): 38.912109375",
    "step:1 - global_seqlen/min:484245.000 - actor/entropy:0.323 - actor/kl_loss:0.000 - actor/pg_loss:0.001 - "
    "actor/grad_norm:0.020 - critic/score/mean:0.558 - critic/rewards/mean:0.558 - critic/rewards/max:1.000",
    "2025-03-06 22:02:53,086\tINFO worker.py:1655 -- Connecting to existing Ray cluster at address: 127.0.0.1:6379...",
]
KEYS = [row["key"] for row in fl.SIGNATURES]


@pytest.mark.parametrize("row", fl.SIGNATURES, ids=KEYS)
def test_a_row_is_complete_and_its_real_text_reads_as_it(row):
    assert row["class"] and row["cause"] and row["fix"] and row["seen"] and "#" in row["source"]
    lines = REAL[row["key"]]
    assert row["key"] in {fl.classify(line)["key"] for line in lines if fl.classify(line)}
    first = fl.first_failure({"node": fl.events("node", "log", lines)})["first"]
    # a row that is a cause is the block's first failure; a follower's block holds only followers
    assert first["key"] == row["key"] if not row["follower"] else first["only_followers"]
    assert fl.classify(row["seen"])["key"] == row["key"]


def test_every_report_text_has_its_row():
    assert sorted(REAL) == sorted(KEYS)


def test_healthy_logs_read_as_healthy():
    verdict = fl.first_failure({"head": fl.events("head", "log", HEALTHY), "w1": []})
    assert verdict["healthy"] and verdict["first"] is None
    assert fl.say(verdict) == ([], {"failed": False})


@pytest.mark.parametrize("line, offset, year, boot, expected", [
    ("EI0002: [PID: 13075] 2025-06-25-10:45:23.586.187 The wait", 0, None, None, (2025, 6, 25, 10, 45, 23, 0.586)),
    ("[ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778]", 28800, None, None,
     (2025, 7, 22, 19, 49, 57, 0.177)),
    ("(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers", 0, None, None,
     (2025, 4, 2, 15, 2, 0, 0.117)),
    ("2025-03-06 22:02:53,086\tINFO worker.py:1655 -- Connecting", 0, None, None, (2025, 3, 6, 22, 2, 53, 0.086)),
    ("WorkerDict pid=904548) [E331 20:50:12.688969421 socket.cpp:1011] [c10d]", 0, 2025, None,
     (2025, 3, 31, 20, 50, 12, 0.688969421)),
    ("ERROR 06-09 06:57:48 worker_base.py:581] RuntimeError: NPU out of memory.", 0, 2025, None,
     (2025, 6, 9, 6, 57, 48, 0.0)),
    ("[ 7248.743279] Out of memory: Killed process 16832", 0, None, 1000000.0, None),
    ("    trainer.fit()", 0, None, None, None),
])
def test_a_line_gives_its_time_on_the_utc_clock(line, offset, year, boot, expected):
    when = fl.stamp(line, offset, year, boot)
    if boot is not None:
        assert when == pytest.approx(boot + 7248.743279)
    elif expected is None:
        assert when is None
    else:
        assert when == pytest.approx(calendar.timegm(expected[:6] + (0, 0, 0)) + expected[6])


WORKER_ERR = ["Traceback (most recent call last):",
              '  File "/verl/verl/workers/megatron_workers.py", line 612, in update_actor'] + REAL["npu_oom"][1:]
HEAD_LOG = REAL["ray_task_error"] + REAL["actor_died"] + REAL["placement_group_exists"] + REAL["tbe_subprocess_gone"]


def test_a_worker_failing_first_is_named_not_the_heads_followers():
    found = {"head": fl.events("head", "training log", HEAD_LOG),
             "w2": fl.events("w2", "worker-1.err", WORKER_ERR, mtime=1_700_000_000.0)}
    verdict = fl.first_failure(found)
    first = verdict["first"]
    assert (first["node"], first["key"], first["transient"], first["only_followers"]) == ("w2", "npu_oom", False, False)
    assert verdict["followers"] == sum(1 for event in verdict["evidence"] if event["follower"]) >= 5
    assert verdict["evidence"][0]["node"] == "w2"
    text = fl.evidence_lines(verdict)
    assert len(text) == len(verdict["evidence"]) and text[0].startswith("2023-11-14 22:13:20 UTC  w2  worker-1.err: ")
    assert text[-1].endswith("(follower)")


def test_the_clock_offsets_order_the_nodes():
    # w1's HCCL timeout (03:49:57) is stamped before w2's error (04:30), but w1's clock is an hour behind
    found = {"w1": fl.events("w1", "plog", REAL["hccl_socket_timeout"][3:]),
             "w2": fl.events("w2", "worker.err", ["[2025-07-23 04:30:00,000 E 1 1] core_worker.cc:1: x", REAL["npu_oom"][1]])}
    assert fl.first_failure(found)["first"]["node"] == "w1"
    assert fl.first_failure(found, {"w1": -3600})["first"]["node"] == "w2"


def test_the_general_row_gives_way_to_the_specific_text_beside_it():
    verdict = fl.first_failure({"w1": fl.events("w1", "worker.err", REAL["hccl_notify_timeout"])})
    assert verdict["first"]["key"] == "hccl_notify_timeout"


def test_a_head_root_cause_under_many_followers_is_named():
    lines = REAL["python_error"] + REAL["tbe_subprocess_gone"] * 40 + REAL["ray_task_error"] + REAL["actor_died"]
    verdict = fl.first_failure({"head": fl.events("head", "training log", lines)})
    assert verdict["first"]["key"] == "python_error" and verdict["followers"] > 40


def test_only_followers_name_the_first_of_them():
    verdict = fl.first_failure({"head": fl.events("head", "training log", REAL["worker_killed"])})
    assert verdict["first"]["key"] == "worker_killed" and verdict["first"]["only_followers"]
    lines, stats = fl.say(verdict)
    assert lines[0].startswith("only followers found") and stats["only_followers"]


def test_a_workers_line_forwarded_to_the_driver_is_its_nodes():
    line = "(WorkerDict pid=7, ip=10.0.0.2) " + REAL["npu_oom"][1]
    event = fl.events("head", "training log", [line], ip_nodes={"10.0.0.2": "w2"})[0]
    assert event["node"] == "w2" and event["line"].startswith("RuntimeError: NPU out of memory")
    # its time is the head's clock (the driver's log), so the head's offset is the one allowed for
    stamped = fl.events("head", "training log", ["2025-03-06 22:02:53,086\tINFO worker.py:1655 -- x", line],
                        ip_nodes={"10.0.0.2": "w2"})
    assert fl.first_failure({"head": stamped}, {"head": 60, "w2": -3600})["first"]["time"] == pytest.approx(
        calendar.timegm((2025, 3, 6, 22, 1, 53, 0, 0, 0)) + 0.086)


def test_say_it_short():
    verdict = fl.first_failure({"w2": fl.events("w2", "worker.err", REAL["npu_oom"], mtime=1_700_000_000.0)})
    lines, stats = fl.say(verdict)
    assert len(lines) == 3 and lines[0].startswith("first failure: w2 at 2023-06-09 06:57:48 UTC, NPU out of memory")
    assert "deterministic" in lines[1] and lines[2].startswith("fix: lower verl_gpu_memory_utilization")
    assert stats["failed"] and stats["node"] == "w2" and stats["signature"] == "npu_oom" and not stats["transient"]
    assert stats["source"] == "vllm-ascend#19, vllm-ascend#1127"


def test_diagnose_reads_the_heads_tail_and_every_nodes_scan():
    scan = {"w3": {"clock": {"utc_offset": 0, "boot": 1_699_990_000.0},
                   "files": [{"path": "dmesg", "mtime": None, "lines": [[4, REAL["host_oom_kernel"][1]]]}]}}
    lines, stats = fl.diagnose(HEAD_LOG + REAL["worker_killed"], scan, offsets={"w3": 0})
    assert stats["node"] == "w3" and stats["signature"] == "host_oom_kernel" and stats["transient"]
    assert lines[0].startswith("first failure: w3 at 2023-11-14 21:27:28 UTC")
    assert fl.diagnose(HEALTHY) == ([], {"failed": False})


def test_the_troubleshooting_failure_section_is_generated_from_the_table():
    """Fix: .venv/bin/python tools/settings_table.py --write"""
    for page in (settings_table.TROUBLESHOOTING_FILE, settings_table.TROUBLESHOOTING_ZH_FILE):
        assert page.read_text() == settings_table.troubleshooting_text(page), page
    assert all(row["source"] in settings_table.failures_text() for row in fl.SIGNATURES)


def test_lines_before_the_trainings_start_are_an_earlier_runs():
    found = {"w1": fl.events("w1", "plog", REAL["hccl_socket_timeout"][3:]),
             "w2": fl.events("w2", "worker.err", ["[2025-07-23 04:30:00,000 E 1 1] core_worker.cc:1: x", REAL["npu_oom"][1]])}
    since = calendar.timegm((2025, 7, 23, 4, 0, 0, 0, 0, 0))
    assert fl.first_failure(found, since=since)["first"]["node"] == "w2"
    assert fl.first_failure(found, since=since + 7200)["healthy"]


def test_untimed_lines_give_the_general_row_way_to_the_specific_one_below_it():
    lines = [REAL["hccl_socket_timeout"][0], "[rank1]: EI0006: Getting socket times out."]
    assert fl.first_failure({"head": fl.events("head", "training log", lines)})["first"]["key"] == "hccl_socket_timeout"


def test_the_logs_bundle_names_the_first_failure_across_the_nodes(tmp_path):
    """logs.yml's collection: the worker's Ray log holds the cause, the head's training log its followers; an earlier run's
    error (before the training's start) and the scripts' folder are not read."""
    import os
    start = 1_700_000_000
    (tmp_path / "head" / "deploy-state").mkdir(parents=True)
    (tmp_path / "head" / "deploy-state" / "started_at").write_text("%d\n" % start)
    (tmp_path / "head" / "training").mkdir()
    (tmp_path / "head" / "training" / "verl_run.log").write_text("\n".join(HEAD_LOG) + "\n")
    (tmp_path / "head" / "scripts").mkdir()
    (tmp_path / "head" / "scripts" / "start_verl.sh").write_text(REAL["npu_oom"][1] + "\n")
    ray = tmp_path / "w2" / "ray"
    ray.mkdir(parents=True)
    (ray / "worker-1.err").write_text("\n".join(WORKER_ERR) + "\n")
    (ray / "worker-0.err").write_text(REAL["hydra_config"][0] + "\n")
    os.utime(tmp_path / "head" / "training" / "verl_run.log", (start + 120, start + 120))
    os.utime(ray / "worker-1.err", (start + 100, start + 100))
    os.utime(ray / "worker-0.err", (start - 3600, start - 3600))  # an earlier run's
    text = fl.diagnose_bundle(str(tmp_path), "head")
    assert text.startswith("first failure: w2 at 2023-11-14 22:15:00 UTC, NPU out of memory"), text
    assert "ray/worker-1.err" in text and "scripts" not in text and "hydra" not in text.lower(), text
    empty = tmp_path / "empty"
    (empty / "head" / "training").mkdir(parents=True)
    assert fl.diagnose_bundle(str(empty), "head").startswith("no line of the failure table")
