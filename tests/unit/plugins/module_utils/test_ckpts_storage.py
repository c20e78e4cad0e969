"""verl_ckpts_dir: one storage on every node, decided from the mount (plugins/module_utils/_ckpts.py storage_identity).

The table is made of /proc/self/mountinfo lines as public sources show them (each names its source). A line is
"placed" on two nodes: the same storage mounted on another node gets another mount id and another anonymous device
number (every client numbers it itself); a FUSE daemon numbers its inodes itself, so the worker's inode differs too;
a local disk runs under another kernel (boot id) on another machine. The verdict of each setup is stated, and each
refusal's fix (mount the same shared storage on the worker) is applied and shown to pass.
"""
from __future__ import annotations

import pytest

from ansible_collections.verl.deploy.plugins.module_utils import _ckpts as ck

LAUNCH = {"ckpts_dir": "/data/ckpts", "nnodes": 2}

# (kind, line, source). Mount points are replaced by /data (the folder verl_ckpts_dir is in) when placed.
LINES = {
    # gocsi's mount parser test (rexray/gocsi), a CentOS 7 host: NFS 4.1 and NFS 3 mounts, an s3fs one, xfs, tmpfs.
    "nfs4": "128 74 0:41 / /home/akutz/red rw,relatime shared:74 - nfs4 localhost:/home/akutz rw,vers=4.1,rsize=524288,"
            "wsize=524288,namlen=255,hard,proto=tcp6,port=0,timeo=600,retrans=2,sec=sys,clientaddr=::1,local_lock=none,addr=::1",
    "nfs3": "121 61 0:39 / /var/lib/rexray/volumes/vol01 rw,relatime shared:69 - nfs 192.168.1.80:/ifs/vols/vol01 rw,vers=3,"
            "rsize=131072,wsize=524288,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=192.168.1.80,mountvers=3,"
            "mountport=300,mountproto=udp,local_lock=none,addr=192.168.1.80",
    "nfs3-subfolder": "124 61 0:39 / /var/lib/rexray/csi/volumes/vol01 rw,relatime shared:69 - nfs 192.168.1.80:/ifs/vols/vol01/data "
                      "rw,vers=3,rsize=131072,wsize=524288,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,addr=192.168.1.80",
    "s3fs": "81 62 0:39 / /var/lib/rexray/volumes/s3fsvol01 rw,nosuid,nodev,relatime shared:31 - fuse.s3fs s3fs rw,user_id=0,group_id=0",
    "xfs": "72 60 8:1 / /boot rw,relatime shared:28 - xfs /dev/sda1 rw,seclabel,attr2,inode64,noquota",
    "xfs-bind": "119 74 253:2 /akutz/1 /home/akutz/2 rw,relatime shared:29 - xfs /dev/mapper/cl-home rw,seclabel,attr2,inode64,noquota",
    "tmpfs": "109 23 0:35 / /run/user/1000 rw,nosuid,nodev,relatime shared:62 - tmpfs tmpfs rw,seclabel,size=388200k,mode=700,uid=1000,gid=1000",
    # fluid's mountinfo parser test (fluid-cloudnative/fluid pkg/utils/mountinfo/mountinfo_test.go): a JuiceFS FUSE mount.
    "juicefs": "1764 1620 0:388 / /runtime-mnt/juicefs/default/jfsdemo/juicefs-fuse ro,relatime shared:475 - fuse.juicefs "
               "JuiceFS:minio ro,user_id=0,group_id=0,default_permissions,allow_other",
    # The JuiceFS CSI driver's notes on a pod's subPath (juicedata/juicefs-csi-driver): a bind mount of a JuiceFS folder.
    "juicefs-bind": "3955 3905 0:864 /abc /var/lib/kubelet/pods/p/volume-subpaths/pv/tools/0 rw,relatime shared:449 - fuse.juicefs "
                    "JuiceFS:test-fluid-2 rw,user_id=0,group_id=0,default_permissions,allow_other",
    "juicefs-whole": "3952 3905 0:864 / /var/lib/kubelet/pods/p/volumes/kubernetes.io~csi/pv/mount rw,nosuid,nodev,relatime shared:449 "
                     "- fuse.juicefs JuiceFS:test-fluid-2 rw",
    # A GlusterFS FUSE client's line as a CSI node plugin's mountinfo reader test pastes it.
    "glusterfs": "101 55 0:42 / /var/lib/glusterfs-volume/root\\040volume rw,nosuid,nodev,relatime shared:12 - fuse.glusterfs "
                 "server-a:gv0 rw,user_id=0,group_id=0",
    # BeeGFS's client mount (beegfs_nodev, cfgFile in the super options), as a BeeGFS mount parser test pastes it.
    "beegfs": "32 43 0:69 / /mnt/beegfs rw,relatime shared:617 master:2 - beegfs beegfs_nodev rw,cfgFile=/etc/beegfs/beegfs-client.conf",
    # CephFS kernel client and ceph-fuse, source and type as the kernel prints them (docs.ceph.com mount.ceph(8): the
    # kernel client's source is <monitors>:/<path>; ceph-fuse mounts as fuse.ceph-fuse with source ceph-fuse).
    "ceph": "64 21 0:53 / /mnt/cephfs rw,relatime - ceph 10.0.0.1:6789,10.0.0.2:6789:/volumes/_nogroup/train rw,name=admin,acl",
    "ceph-fuse": "65 21 0:54 / /mnt/cephfuse rw,nosuid,nodev,relatime - fuse.ceph-fuse ceph-fuse rw,user_id=0,group_id=0,allow_other",
    # Lustre: source <MGS nid>@tcp:/<fsname> as Azure/azlustre's lustre_mount.sh writes it to fstab (type lustre).
    "lustre": "88 22 0:60 / /lustre rw,relatime shared:50 - lustre 10.0.0.4@tcp:/LustreFS rw,flock,lazystatfs",
    # GPFS/Spectrum Scale: the device is the file system's name (OSC's /proc/mounts: "scratch /fs/scratch gpfs rw,relatime").
    "gpfs": "90 22 0:61 / /fs/scratch rw,relatime shared:52 - gpfs scratch rw",
    # CIFS/SMB 3.1.1, as a mountinfo type test pastes it.
    "cifs": "45 36 0:45 / /mnt/smb rw,relatime - cifs //server/share rw,vers=3.1.1,cache=strict,serverino",
    "cifs-noserverino": "45 36 0:45 / /mnt/smb rw,relatime - cifs //server/share rw,vers=3.1.1,cache=strict,noserverino",
    # Huawei Cloud OBS through obsfs, goofys: FUSE subtypes as the s3fs-family tools mount them (a mount of the bucket).
    "obsfs": "77 22 0:70 / /mnt/obs rw,nosuid,nodev,relatime shared:41 - fuse.obsfs obsfs rw,user_id=0,group_id=0,allow_other",
    "goofys": "78 22 0:71 / /mnt/goofys rw,nosuid,nodev,relatime shared:42 - fuse.goofys my-bucket rw,user_id=0,group_id=0,allow_other",
    # The simulated cluster: one Docker volume bind-mounted into every node container of one host.
    "overlay": "610 520 0:120 / / rw,relatime - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/A,upperdir=/u,workdir=/w",
    "ext4-volume": "700 610 259:2 /var/lib/docker/volumes/verl-sim-ckpts/_data /sim/ckpts rw,relatime - ext4 /dev/nvme0n1p2 rw",
}


def place(kind, node, mount_point="/data", ino=4242, **changes):
    """The storage node_facts reads for /data/ckpts when LINES[kind] is mounted at mount_point on node (1: the head)."""
    mount = ck.parse_mountinfo(LINES[kind])[0]
    mount["mount_point"] = mount_point
    family = ck.storage_kind(mount)[0]
    # Every client numbers the mount's device itself; a FUSE daemon numbers its inodes itself; each machine has a kernel.
    dev = "0:%d" % (40 + node) if family != "local" else mount["dev"]
    storage = ck.storage_of(mount, dev, ino + (node if family == "fuse" else 0), 0, "/data/ckpts", "", "boot-%d" % node)
    storage.update(changes)
    return {"read": True, "path": "/data/ckpts", "storage": storage}


SHARED = ["nfs4", "nfs3", "s3fs", "juicefs", "glusterfs", "beegfs", "ceph", "ceph-fuse", "lustre", "gpfs", "cifs",
          "cifs-noserverino", "obsfs", "goofys"]


@pytest.mark.parametrize("kind", SHARED)
def test_a_shared_storage_is_one_storage_on_every_node(kind):
    nodes = {"head": place(kind, 1), "worker1": place(kind, 2)}
    assert ck.not_shared(nodes, LAUNCH) == ""
    summary = ck.storage_summary(nodes, LAUNCH)
    assert summary.endswith(", one storage on every node") and ck.storage_kind(nodes["head"]["storage"])[2] in summary


@pytest.mark.parametrize("kind, name", [("nfs4", "NFS"), ("nfs3", "NFS"), ("cifs", "CIFS/SMB"), ("ceph", "CephFS (kernel client)"),
                                        ("ceph-fuse", "CephFS (ceph-fuse)"), ("glusterfs", "GlusterFS (FUSE)"), ("lustre", "Lustre"),
                                        ("beegfs", "BeeGFS"), ("gpfs", "GPFS/Spectrum Scale"), ("juicefs", "JuiceFS"),
                                        ("obsfs", "obsfs (Huawei Cloud OBS)"), ("s3fs", "s3fs"), ("goofys", "goofys"),
                                        ("xfs", "a local file system (xfs)"), ("tmpfs", "a local file system (tmpfs)"),
                                        ("overlay", "a local file system (overlay)")])
def test_the_summary_names_the_kind(kind, name):
    assert ck.storage_kind(ck.parse_mountinfo(LINES[kind])[0])[2] == name


def test_nfs3_and_nfs4_of_one_export_and_a_bind_mount_of_its_subfolder_are_one_storage():
    """One node mounts vol01 at /data/.. (the folder is data/ckpts in it), the other vol01/data itself: same folder."""
    head = place("nfs3", 1, mount_point="/", ino=7)
    head["storage"]["existing"] = "/data/ckpts"
    worker = place("nfs3-subfolder", 2, mount_point="/data", ino=7)
    assert ck.not_shared({"head": head, "worker1": worker}, LAUNCH) == ""
    # The server written as an address on one node and as a name on the other: the same export, the same file id.
    renamed = place("nfs3-subfolder", 2, mount_point="/data", ino=7, source="nas01:/ifs/vols/vol01/data")
    assert ck.not_shared({"head": head, "worker1": renamed}, LAUNCH) == ""


def test_a_bind_mount_of_a_juicefs_folder_is_the_folder_of_the_whole_mount():
    head = place("juicefs-bind", 1)                         # /abc of the volume bound at /data
    worker = place("juicefs-whole", 2, mount_point="/")     # the whole volume at /: the folder is /data/ckpts in it
    worker["storage"]["existing"] = "/abc/ckpts"
    assert ck.not_shared({"head": head, "worker1": worker}, LAUNCH) == ""
    worker["storage"]["existing"] = "/other/ckpts"
    assert ck.not_shared({"head": head, "worker1": worker}, LAUNCH) != ""


# The refusals: (what the worker has instead, the head's storage). The fix applied: the worker mounts what the head has.
NOT_SHARED = [
    ("xfs", "nfs4"),                     # the share is not mounted on the worker: its /data is the local disk
    ("xfs", "xfs"),                      # a local disk on each machine (two kernels)
    ("tmpfs", "tmpfs"),
    ("overlay", "overlay"),              # the containers' own file systems
    ("xfs-bind", "xfs-bind"),            # a bind mount of a local folder on each machine
    ("ext4-volume", "juicefs"),
]


@pytest.mark.parametrize("worker_kind, head_kind", NOT_SHARED)
def test_separate_storage_is_refused_and_mounting_the_share_passes(worker_kind, head_kind):
    nodes = {"head": place(head_kind, 1), "worker1": place(worker_kind, 2)}
    text = ck.not_shared(nodes, LAUNCH)
    assert text.startswith("verl_ckpts_dir=/data/ckpts is not the same storage on every node (head: ")
    assert "Fix: mount one shared file system" in text and "JuiceFS" in text
    if "local" in {ck.storage_kind(n["storage"])[0] for n in nodes.values()}:
        assert "is one storage only for containers of one host" in text
    assert "one storage on every node" not in ck.storage_summary(nodes, LAUNCH).replace("not one storage", "")
    shared = head_kind if ck.storage_kind(nodes["head"]["storage"])[0] != "local" else "nfs4"
    fixed = {"head": place(shared, 1), "worker1": place(shared, 2)}
    assert ck.not_shared(fixed, LAUNCH) == ""


@pytest.mark.parametrize("change", [
    {"source": "server-b:gv1"},                          # another GlusterFS volume
    {"root": "/other"},                                  # another folder of the volume
])
def test_another_fuse_volume_or_folder_is_refused(change):
    nodes = {"head": place("glusterfs", 1), "worker1": place("glusterfs", 2, **change)}
    assert "is not the same storage on every node" in ck.not_shared(nodes, LAUNCH)


def test_another_nfs_folder_with_the_same_name_is_refused_by_its_file_id():
    nodes = {"head": place("nfs4", 1), "worker1": place("nfs4", 2, ino=99)}
    assert "is not the same storage on every node" in ck.not_shared(nodes, LAUNCH)


def test_the_simulated_cluster_shares_one_volume_on_one_kernel():
    """The nodes are containers of one host: one kernel (boot id), one device, one inode: one storage, said so."""
    nodes = {host: place("ext4-volume", 1, mount_point="/sim/ckpts") for host in ("node1", "node2")}
    for node in nodes.values():
        node["storage"]["existing"] = "/sim/ckpts"
    assert ck.not_shared(nodes, LAUNCH) == ""
    assert ck.storage_summary(nodes, LAUNCH).endswith("one storage on every node (the nodes run on one host's kernel)")
    assert ck.storage_summary({"node1": nodes["node1"]}, dict(LAUNCH, nnodes=1)).startswith("a local file system (ext4)")


def test_fuse_views_of_local_files_and_fuseblk_are_local():
    for fstype in ("fuse.lxcfs", "fuse.mergerfs", "fuseblk"):
        assert ck.storage_kind({"fstype": fstype, "source": "x"})[0] == "local"
    assert ck.storage_kind({"fstype": "fuse.somefs", "source": "x"}) == ("fuse", "fuse.somefs", "FUSE (somefs)")
    assert ck.storage_kind({"fstype": "fuse", "source": "sshfs#host:/"})[0] == "fuse"


# The comparison's checkpoint folder (playbooks/compare.yml: <verl_log_dir>/compare/ckpts) is judged by the same rule
# before the comparison changes anything: refused naming the nodes, their storage and the fix; the fix applied passes.
@pytest.mark.parametrize("worker_kind, head_kind", NOT_SHARED)
def test_the_comparisons_checkpoint_folder_on_separate_storage_is_refused_and_the_fix_passes(worker_kind, head_kind):
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare

    nodes = {"head": place(head_kind, 1), "worker1": place(worker_kind, 2), "worker2": place(head_kind, 3)}
    text = compare.ckpts_not_shared(nodes, "/data/logs/compare/ckpts", "/data/logs", 3)
    assert text.startswith("The comparison's checkpoint folder /data/logs/compare/ckpts (below verl_log_dir=/data/logs) "
                           "is not the same storage on every node ("), text
    assert "worker1: " in text and "Nothing was changed. Fix: give verl_log_dir a folder on one shared file system" in text
    assert ("a local disk (" in text) == (ck.storage_kind(nodes["worker1"]["storage"])[0] == "local"), text
    # The fix: one shared storage at verl_log_dir on every node (the head's, when it is shared; else an NFS export).
    shared = head_kind if ck.storage_kind(nodes["head"]["storage"])[0] != "local" else "nfs4"
    fixed = {host: place(shared, number) for number, host in enumerate(nodes, start=1)}
    assert compare.ckpts_not_shared(fixed, "/data/logs/compare/ckpts", "/data/logs", 3) == ""


def test_the_comparisons_checkpoint_folder_on_one_node_or_one_host_is_fine():
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare

    apart = {"head": place("xfs", 1), "worker1": place("xfs", 2)}
    assert compare.ckpts_not_shared(apart, "/l/compare/ckpts", "/l", 1) == ""             # one node: nothing to share
    assert compare.ckpts_not_shared({"head": place("xfs", 1)}, "/l/compare/ckpts", "/l", 2) == ""  # one read
    unread = dict(apart, worker1={"read": False, "path": "/l/compare/ckpts"})
    assert compare.ckpts_not_shared(unread, "/l/compare/ckpts", "/l", 2) == ""            # what was not read is not judged here
    one_host = {"head": place("ext4-volume", 1), "worker1": place("ext4-volume", 1)}     # containers of one host's kernel
    assert compare.ckpts_not_shared(one_host, "/l/compare/ckpts", "/l", 2) == ""


# --------------------------------------------------------------------------- identity rules of one storage seen two ways

# A GlusterFS FUSE client names the volfile server it fetched the volume's layout from (mount -t glusterfs
# server-a:/gv0; backup-volfile-servers= only for the first fetch): two nodes may name two servers of one volume.
def test_one_glusterfs_volume_through_two_volfile_servers_is_one_storage():
    nodes = {"head": place("glusterfs", 1), "worker1": place("glusterfs", 2, source="server-b:gv0")}
    assert ck.not_shared(nodes, LAUNCH) == ""
    assert ck.storage_summary(nodes, LAUNCH).endswith(", one storage on every node")


# OCFS2 on one SAN disk, as a mountinfo reader's test pastes the line ("41 1 8:17 / ... - ocfs2 /dev/sdb1 rw"): each node
# names the disk itself, /dev/sdc (8:32) on one and /dev/sdd (8:48) on the other; the file system UUID is the disk's.
OCFS2 = "41 1 8:32 / /data rw,relatime shared:1 - ocfs2 /dev/sdc rw,_netdev,heartbeat=local,nointr,data=ordered,coherency=full"
UUID = "5a1f0c2e-8d3b-4c61-9f0e-2b7d4e1a9c33"


def _ocfs2(node, device, uuid, ino=4242):
    mount = ck.parse_mountinfo(OCFS2.replace("8:32", device[0]).replace("/dev/sdc", device[1]))[0]
    storage = ck.storage_of(mount, mount["dev"], ino, 12345, "/data/ckpts", "", "boot-%d" % node)
    storage["uuid"] = uuid
    return {"read": True, "path": "/data/ckpts", "storage": storage}


def test_one_ocfs2_disk_under_two_device_names_is_one_storage_by_its_uuid():
    nodes = {"head": _ocfs2(1, ("8:32", "/dev/sdc"), UUID), "worker1": _ocfs2(2, ("8:48", "/dev/sdd"), UUID)}
    assert ck.storage_kind(nodes["head"]["storage"])[:2] == ("network", "ocfs2")
    assert ck.not_shared(nodes, LAUNCH) == ""
    # Two disks (two UUIDs) are two storages; the fix (the worker mounts the head's disk) passes.
    other = dict(nodes, worker1=_ocfs2(2, ("8:48", "/dev/sdd"), "0b9e7c41-2f6a-4d8e-a1c3-7e5f9d2b4a60"))
    assert "is not the same storage on every node" in ck.not_shared(other, LAUNCH)


def test_the_uuid_of_a_block_device_is_read_from_the_by_uuid_links(tmp_path):
    import os
    (tmp_path / UUID).symlink_to("/dev/null")  # udev's link to the device node; /dev/null is 1:3
    rdev = os.stat("/dev/null").st_rdev
    assert ck.block_uuid("%d:%d" % (os.major(rdev), os.minor(rdev)), str(tmp_path)) == UUID
    assert ck.block_uuid("8:48", str(tmp_path)) == "" and ck.block_uuid("8:48", str(tmp_path / "none")) == ""


# Two NFS servers that each export their own file system as `/` (NFSv4 pseudo-root), mounted at one path: on a first
# deploy verl_ckpts_dir is not there yet, so the mount point is read, the root of each server's file system, whose inode
# is the same number on both (2 on ext4). Written alike, the servers tell them apart.
NFS_ROOT = "580 41 0:80 / /data rw,relatime shared:570 - nfs4 10.0.0.11:/ rw,vers=4.2,hard,proto=tcp,addr=10.0.0.11"


def _nfs_root(node, source):
    mount = ck.parse_mountinfo(NFS_ROOT.replace("10.0.0.11", source))[0]
    storage = ck.storage_of(mount, "0:%d" % (80 + node), 2, 0, "/data", "ckpts", "boot-%d" % node)
    return {"read": True, "path": "/data/ckpts", "storage": storage}


def test_two_nfs_servers_exporting_their_root_at_one_path_are_two_storages_and_one_server_passes():
    apart = {"head": _nfs_root(1, "10.0.0.11"), "worker1": _nfs_root(2, "10.0.0.12")}
    text = ck.not_shared(apart, LAUNCH)
    assert "is not the same storage on every node" in text and "10.0.0.12:/" in text
    assert ck.not_shared({"head": _nfs_root(1, "nas-a"), "worker1": _nfs_root(2, "nas-b")}, LAUNCH) != ""
    # The fix: the worker mounts the head's server.
    assert ck.not_shared({"head": _nfs_root(1, "10.0.0.11"), "worker1": _nfs_root(2, "10.0.0.11")}, LAUNCH) == ""
    # One server written as an address on one node and a name on the other cannot be told apart here: not refused.
    assert ck.not_shared({"head": _nfs_root(1, "10.0.0.11"), "worker1": _nfs_root(2, "nas-a")}, LAUNCH) == ""


# FUSE file systems that serve this host's own files, as each tool mounts them (gocryptfs' line from a mountinfo
# reader's test; the others' type and source as encfs, squashfuse, a plain `fuse` mount of a local disk and sshfs write
# them): local storage, so two machines are two storages.
LOCAL_FUSE = {
    "gocryptfs": "571 41 0:71 / /data rw,nosuid,nodev,relatime shared:560 - fuse.gocryptfs gocryptfs rw,user_id=1000",
    "encfs": "572 41 0:72 / /data rw,nosuid,nodev,relatime shared:561 - fuse.encfs encfs rw,user_id=0,group_id=0",
    "squashfuse": "573 41 0:73 / /data rw,nosuid,nodev,relatime shared:562 - fuse.squashfuse squashfuse rw,user_id=0,group_id=0",
    "fuse-local-disk": "574 41 0:74 / /data rw,nosuid,nodev,relatime shared:563 - fuse /dev/sdb1 rw,user_id=0,group_id=0",
    "sshfs-loopback": "575 41 0:75 / /data rw,nosuid,nodev,relatime shared:564 - fuse.sshfs root@127.0.0.1:/srv/ckpts rw,user_id=0",
    "sshfs-localhost": "576 41 0:76 / /data rw,nosuid,nodev,relatime shared:565 - fuse sshfs#localhost:/srv/ckpts rw,user_id=0",
}


@pytest.mark.parametrize("kind", sorted(LOCAL_FUSE))
def test_a_local_fuse_file_system_is_local_and_two_machines_are_refused(kind):
    mount = ck.parse_mountinfo(LOCAL_FUSE[kind])[0]
    assert ck.storage_kind(mount)[0] == "local"
    nodes = {host: {"read": True, "path": "/data/ckpts",
                    "storage": ck.storage_of(mount, mount["dev"], 4242, 0, "/data/ckpts", "", "boot-%d" % node)}
             for node, host in enumerate(("head", "worker1"), start=1)}
    text = ck.not_shared(nodes, LAUNCH)
    assert "is not the same storage on every node" in text and "is one storage only for containers of one host" in text
    fixed = {"head": place("nfs4", 1), "worker1": place("nfs4", 2)}
    assert ck.not_shared(fixed, LAUNCH) == ""


def test_sshfs_to_another_host_stays_a_shared_fuse_storage():
    assert ck.storage_kind({"fstype": "fuse.sshfs", "source": "root@10.0.0.9:/srv/ckpts"})[0] == "fuse"
    assert ck.storage_kind({"fstype": "fuse", "source": "sshfs#nas:/srv"})[0] == "fuse"
