"""The image's software, checked in the container stage before Ray, on nodes that train (after test_4): a CUDA-only
transformer_engine and a missing weight bridge (mbridge) in a worker's image, a Ray of another version than the head's in
the other worker's (one deploy), and another verl release in the head's each stop the deploy naming the node, the package
and the fix, and the running training is left alone."""
from sim_scenario import hosts, in_verl, playbook, tail, training_pids

from test_4_npu_subset_and_foreign_holder import SUBSET

HEAD = hosts("ray_head")[0]
SITE = "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"


def test_a_cuda_transformer_engine_a_missing_bridge_and_another_ray_in_the_workers_images_are_refused_by_name():
    """One deploy: the last worker's image has transformer_engine and no mbridge (as `simcluster.py build --without
    mbridge` builds it), the first worker's Ray reports 2.59.0 (its distribution's metadata edited) where the head's is
    2.60.0 (ray#50511: Ray would refuse the join)."""
    skewed, worker = hosts("ray_workers")[0], hosts("ray_workers")[-1]
    pid = training_pids(HEAD)
    in_verl(worker, "cp -R /opt/sim/stand-ins/transformer_engine {site}/ && mv {site}/mbridge /tmp/mbridge".format(site=SITE))
    in_verl(skewed, "sed -i 's/^Version: 2.60.0$/Version: 2.59.0/' {site}/ray-2.60.0.dist-info/METADATA".format(site=SITE))
    try:
        proc = playbook("deploy.yml", *SUBSET)
    finally:
        in_verl(worker, "rm -rf {site}/transformer_engine && mv /tmp/mbridge {site}/mbridge".format(site=SITE))
        in_verl(skewed, "sed -i 's/^Version: 2.59.0$/Version: 2.60.0/' {site}/ray-2.60.0.dist-info/METADATA".format(site=SITE))
    assert proc.returncode != 0, tail(proc)
    assert "%s: in container verl (image" % worker in proc.output, tail(proc)
    # (Copied in by hand it has no package metadata: the check names it without a version.)
    assert "the image has transformer_engine (installed), which is for CUDA: on Ascend it breaks MindSpeed's import" in proc.output, tail(proc)
    assert "mindspeed.megatron_adaptor does not import: CalledProcessError" in proc.output, tail(proc)
    assert ("mbridge, the weight bridge verl 0.8.0 builds this model (type `qwen3`) with (verl 0.8.0's default "
            "actor_rollout_ref.actor.megatron.vanilla_mbridge: True), does not import: ModuleNotFoundError: No module named "
            "'mbridge'") in proc.output, tail(proc)
    assert ("%s: in container verl (image" % skewed in proc.output and "its Ray 2.59.0 with Python" in proc.output
            and "is not the head %s's Ray 2.60.0" % HEAD in proc.output and "RuntimeError: Version mismatch" in proc.output), tail(proc)
    assert training_pids(HEAD) == pid


def test_a_verl_newer_than_the_release_table_is_refused_before_ray():
    """An image is placed by its files, not its version string (a 0.9.0 string on 0.7.0's files is 0.7.0); a version
    newer than every profile is refused unless verl_allow_untested_version says otherwise."""
    pid = training_pids(HEAD)
    in_verl(HEAD, "cp /verl/verl/version/version /tmp/version && echo 0.10.0 > /verl/verl/version/version")
    try:
        proc = playbook("deploy.yml", *SUBSET)
    finally:
        in_verl(HEAD, "cp /tmp/version /verl/verl/version/version")
    assert proc.returncode != 0, tail(proc)
    assert "0.10.0" in proc.output and "verl_allow_untested_version=true" in proc.output, tail(proc)
    assert training_pids(HEAD) == pid
    again = playbook("deploy.yml", *SUBSET)
    assert again.returncode == 0 and "verl 0.8.0; torch 2.7.1, torch_npu" in again.output, tail(again)
