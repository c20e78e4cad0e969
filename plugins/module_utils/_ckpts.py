# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""verl_ckpts_dir as the pre-check reads it on every node, and the rules over what was read.

read_ckpts_dir() runs in verl.deploy.node_facts' one call per host and only reads: the folder (or the nearest
folder of its path that exists: nothing is created before the confirmation), whether the deploy user may write
there, the file system it is on and how much is free, which storage that is (to tell shared storage from one disk
per node without writing a marker), and verl's checkpoints in it. The rules below take those reads of all nodes and
the launch configuration and return '' or a sentence naming the variable, the value and the fix.

What verl v0.7.0 writes, and in which order (verl/trainer/ppo/ray_trainer.py `_save_checkpoint`,
verl/utils/checkpoint/megatron_checkpoint_manager.py `save_checkpoint`):
  <ckpts>/global_step_<N>/actor/dist_ckpt/     optimizer and extra state by every rank; Megatron's dist_checkpointing
                                               writes metadata.json last, from rank 0, after the shards
                                               (megatron/core/dist_checkpointing/serialization.py metadata_finalize_fn)
  <ckpts>/global_step_<N>/actor/huggingface/   the weights (mbridge, the default use_mbridge=True) and, from rank 0,
                                               the Hugging Face config.json and tokenizer
  <ckpts>/global_step_<N>/data.pt              the dataloader state, after the actor's save
  <ckpts>/latest_checkpointed_iteration.txt    N, written last (not with checkpoint.async_save)
With resume_mode=auto verl reads the tracker file and resumes from global_step_<N>; a tracker file that names a
missing folder, or none at all, makes verl start from step 0 without an error (checkpoint_manager.py
find_latest_ckpt_path prints "Checkpoint does not exist" / "Checkpoint tracker file does not exist").
No Ansible imports.
"""
from __future__ import annotations

import os
import re

from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import value_of
from ansible_collections.verl.deploy.plugins.module_utils._node_facts import read_text

# Which storage a mount is, by what its mountinfo line says it is (the kernel's file system type, for FUSE its
# subtype: "fuse.juicefs"): {type: (family, what the summary calls it)}. A network or cluster file system's inode
# numbers are the storage's own (the server's file ids: the same folder has the same inode on every client).
NETWORK_KINDS = {
    "nfs": ("nfs", "NFS"), "nfs4": ("nfs", "NFS"), "cifs": ("smb", "CIFS/SMB"), "smb3": ("smb", "CIFS/SMB"),
    "smbfs": ("smb", "CIFS/SMB"), "ceph": ("ceph", "CephFS (kernel client)"), "glusterfs": ("glusterfs", "GlusterFS"),
    "lustre": ("lustre", "Lustre"), "beegfs": ("beegfs", "BeeGFS"), "gpfs": ("gpfs", "GPFS/Spectrum Scale"),
    "9p": ("9p", "9p"), "virtiofs": ("virtiofs", "virtiofs"), "ocfs2": ("ocfs2", "OCFS2"), "gfs2": ("gfs2", "GFS2"),
    "orangefs": ("orangefs", "OrangeFS"), "pvfs2": ("orangefs", "OrangeFS"), "wekafs": ("wekafs", "WekaFS"),
    "dfs": ("dfs", "DFS"), "afs": ("afs", "AFS"),
}
# FUSE file systems by subtype. Their inode numbers are the FUSE daemon's (s3fs, obsfs and goofys number the files
# as they meet them), so a FUSE storage is told by its source and its folder, not by the inode.
FUSE_KINDS = {
    "juicefs": ("juicefs", "JuiceFS"), "ceph-fuse": ("ceph-fuse", "CephFS (ceph-fuse)"), "ceph": ("ceph-fuse", "CephFS (ceph-fuse)"),
    "glusterfs": ("glusterfs-fuse", "GlusterFS (FUSE)"), "obsfs": ("obsfs", "obsfs (Huawei Cloud OBS)"), "s3fs": ("s3fs", "s3fs"),
    "goofys": ("goofys", "goofys"), "ossfs": ("ossfs", "ossfs (Alibaba Cloud OSS)"), "cosfs": ("cosfs", "cosfs (Tencent COS)"),
    "gcsfuse": ("gcsfuse", "gcsfuse"), "blobfuse": ("blobfuse", "blobfuse"), "blobfuse2": ("blobfuse", "blobfuse"),
    "rclone": ("rclone", "rclone"), "sshfs": ("sshfs", "sshfs"), "alluxio-fuse": ("alluxio", "Alluxio FUSE"),
    "jindo-fuse": ("jindo", "JindoFuse"),
}
# FUSE file systems that serve this host's own files (a view of /proc, a union of local disks, an encrypted or
# compressed view of a local folder or image file): local storage.
FUSE_LOCAL = ("lxcfs", "gvfsd-fuse", "portal", "doc", "fuse-overlayfs", "mergerfs", "bindfs", "gocryptfs", "encfs", "cryfs",
              "securefs", "squashfuse", "squashfuse_ll", "fuse-zip", "archivemount", "ntfs-3g", "ntfs")
# FUSE families whose source's server part is only the entry point of one distributed volume (GlusterFS' volfile
# server: each node may fetch the volume's layout from another of its servers): told by the volume, not the server.
FUSE_BY_VOLUME = ("glusterfs-fuse",)
# Cluster file systems on one shared disk (SAN, iSCSI): each node names the disk itself (/dev/sdc here, /dev/sdd there),
# so the disk is told by its file system UUID (/dev/disk/by-uuid), else the file system id.
BLOCK_SHARED = ("ocfs2", "gfs2")
BY_UUID = "/dev/disk/by-uuid"
LOOPBACK = re.compile(r"^(localhost|ip6-localhost|ip6-loopback|127(\.\d{1,3}){3}|::1|\[::1\])$", re.IGNORECASE)
TRACKER = "latest_checkpointed_iteration.txt"
STEP = re.compile(r"^global_step_(\d+)$")
# The files of a complete save, each written after the parts before it (see the module docstring).
COMPLETE_FILES = ("actor/dist_ckpt/metadata.json", "data.pt")
MODEL_FILES = ("actor/huggingface/config.json",)
# Bytes per parameter in one checkpoint (verl's default save_contents [model, optimizer, extra]): the weights in
# bf16 (2) and the distributed optimizer's fp32 master weights and Adam's two moments (4 + 4 + 4).
MODEL_BYTES, OPTIMIZER_BYTES = 2, 12
SAVE_CONTENTS_KEY = "actor_rollout_ref.actor.checkpoint.save_contents"
KEEP_KEY = "trainer.max_actor_ckpt_to_keep"
GIB = 1024 ** 3


# --------------------------------------------------------------------------- reads (node_facts)

def parse_mountinfo(text):
    """/proc/self/mountinfo -> [{'dev': 'MAJ:MIN', 'root', 'mount_point', 'fstype', 'source', 'options', 'super_options'}]
    in its order."""
    mounts = []
    for line in (text or "").splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            continue
        mounts.append({"dev": fields[2], "root": _unescape(fields[3]), "mount_point": _unescape(fields[4]), "options": fields[5],
                       "fstype": tail[0], "source": _unescape(tail[1]), "super_options": tail[2] if len(tail) > 2 else ""})
    return mounts


def _unescape(text):
    # mountinfo writes a space, a tab, a newline and a backslash of a path as octal escapes.
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), text)


def mount_of(path, mounts):
    """The mount a path lies on: the last-listed mount whose mount point is the longest prefix of the path."""
    best = None
    for mount in mounts:
        point = mount["mount_point"].rstrip("/") or "/"
        if path == point or path.startswith(point.rstrip("/") + "/"):
            if best is None or len(point) >= len(best["mount_point"].rstrip("/") or "/"):
                best = mount
    return best


def nearest_existing(path):
    """(the nearest folder of path that exists (path itself when it does), the part below it that does not)."""
    current, missing = path, []
    while current and current != "/" and not os.path.isdir(current):
        current, name = os.path.split(current)
        missing.insert(0, name)
    return current or "/", "/".join(missing)


def tracked_step(text):
    """The step latest_checkpointed_iteration.txt names (verl reads int() of its text), or None."""
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _step_files(folder):
    return [name for name in COMPLETE_FILES + MODEL_FILES if os.path.isfile(os.path.join(folder, name))]


def storage_of(mount, dev, ino, fsid, existing, missing, boot_id):
    """Which storage a folder is on, as every node can read it without writing: its mount (mount_of(): file system type,
    source, the folder of the file system mounted there), the device, the folder's inode, the file system's id and the
    kernel (boot id). The rules compare these with storage_identity()."""
    mount = mount or {}
    return {"fstype": mount.get("fstype", ""), "source": mount.get("source", ""), "root": mount.get("root", ""),
            "mount_point": mount.get("mount_point", ""),
            # CIFS mounted with noserverino numbers the files on the client: its inodes differ between nodes.
            "local_inodes": "noserverino" in (mount.get("super_options") or "").split(","),
            "dev": dev, "ino": ino, "fsid": fsid, "existing": existing, "missing": missing, "boot_id": (boot_id or "").strip(),
            "uuid": block_uuid(dev) if mount.get("fstype") in BLOCK_SHARED else ""}


def block_uuid(dev, folder=BY_UUID):
    """The file system UUID of block device MAJ:MIN, from udev's /dev/disk/by-uuid links, or ''."""
    try:
        for name in sorted(os.listdir(folder)):
            rdev = os.stat(os.path.join(folder, name)).st_rdev
            if "%d:%d" % (os.major(rdev), os.minor(rdev)) == dev:
                return name.lower()
    except OSError:
        pass
    return ""


def read_ckpts_dir(path, mountinfo=None, boot_id=None):
    """What the rules need of verl_ckpts_dir on this host; reads only. mountinfo, boot_id: the texts of
    /proc/self/mountinfo and /proc/sys/kernel/random/boot_id (read here when None)."""
    if not path or not path.startswith("/"):
        return {"path": path or "", "read": False}
    path = os.path.normpath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        return {"path": path, "read": False, "msg": "it exists and is not a folder"}
    existing, missing = nearest_existing(path)
    result = {"path": path, "read": True, "exists": not missing, "existing": existing, "missing": missing,
              "writable": os.access(existing, os.W_OK | os.X_OK), "euid": os.geteuid()}
    try:
        stat, vfs = os.stat(existing), os.statvfs(existing)
    except OSError as exc:
        result.update(read=False, msg="cannot read %s: %s" % (existing, exc))
        return result
    mount = mount_of(existing, parse_mountinfo(read_text("/proc/self/mountinfo") if mountinfo is None else mountinfo)) or {}
    result.update({
        "readonly": bool(vfs.f_flag & os.ST_RDONLY),
        "free_bytes": vfs.f_bavail * vfs.f_frsize, "size_bytes": vfs.f_blocks * vfs.f_frsize,
        "storage": storage_of(mount, "%d:%d" % (os.major(stat.st_dev), os.minor(stat.st_dev)), stat.st_ino, vfs.f_fsid, existing,
                              missing, read_text("/proc/sys/kernel/random/boot_id") if boot_id is None else boot_id),
        "tracker": None, "steps": [], "step_files": {},
    })
    if result["exists"]:
        result["tracker"] = read_text(os.path.join(path, TRACKER))
        try:
            names = os.listdir(path)
        except OSError:
            names = []
        steps = sorted(int(m.group(1)) for m in (STEP.match(n) for n in names) if m and os.path.isdir(os.path.join(path, m.group(0))))
        result["steps"] = steps
        # Only the folders the rules look at: the one the tracker names, the one before it (to resume from instead) and the newest.
        tracked = tracked_step(result["tracker"])
        before = [step for step in steps if tracked is not None and step < tracked]
        for step in {tracked, before[-1] if before else None, steps[-1] if steps else None} - {None}:
            if step in steps:
                result["step_files"][str(step)] = _step_files(os.path.join(path, "global_step_%d" % step))
    return result


def read_last_training(state_dir, ckpts_dir):
    """On the Ray head's host, in the same call: what the deploy's state folder (<verl_log_dir>/.verl-deploy) recorded
    about the last training (last_step "TIME N", ckpts_seen, ckpts_fs: the device its checkpoint folder was on, launch:
    the record it started from, one JSON line) and what verl_ckpts_dir holds now (exists, fs_now, checkpoints,
    mountpoint), with the keys and the "yes"/"no" of the state folder's own lines. On the host, not in the container:
    the container may be stopped or new, the state folder is on the host. Read by
    _training_state.fresh_start_refusal; reads only."""
    def state(name):
        return (read_text(os.path.join(state_dir, name)) or "").rstrip("\n")

    look = {name: state(file) for name, file in (("last_step", "last_step"), ("ckpts_seen", "ckpts_seen"),
                                                 ("ckpts_fs", "ckpts_fs"), ("launch", "launch.json"))}
    if not os.path.isdir(ckpts_dir or ""):
        return dict(look, exists="no", checkpoints=0)
    # Listed here, right after the state files, not taken from read_ckpts_dir's earlier read of the same call: a training
    # that logs a save step in between would read as "reached step N, no checkpoint" (lost storage) and be refused.
    try:
        fs_now = str(os.stat(ckpts_dir).st_dev)
        names = os.listdir(ckpts_dir)
    except OSError:
        fs_now, names = "", []
    found = sum(1 for name in names if STEP.match(name) and os.path.isdir(os.path.join(ckpts_dir, name)))
    # verl's tracker file alone (its folder gone) still says that checkpoints were written here.
    if not found and os.path.isfile(os.path.join(ckpts_dir, TRACKER)):
        found = 1
    return dict(look, exists="yes", fs_now=fs_now, checkpoints=found, mountpoint="yes" if os.path.ismount(ckpts_dir) else "no")


# --------------------------------------------------------------------------- the settings that shape the saves

def save_contents(launch):
    """What each save holds: verl's default [model, optimizer, extra] unless verl_extra_overrides sets it."""
    text = value_of(launch.get("extra_overrides"), SAVE_CONTENTS_KEY)
    if text is None:
        return ["model", "optimizer", "extra"]
    return [word.strip(" '\"") for word in text.strip("[]").split(",") if word.strip(" '\"")]


def checkpoint_bytes(params, contents):
    """Bytes of one checkpoint of a model of params parameters holding contents."""
    per_param = (MODEL_BYTES if "model" in contents else 0) + (OPTIMIZER_BYTES if "optimizer" in contents else 0)
    per_param += MODEL_BYTES if "hf_model" in contents and "model" not in contents else 0
    return params * per_param


def saves_ahead(launch, from_step=0):
    """How many checkpoints the training writes from from_step on: every save_freq steps and at the last step
    (ray_trainer.py fit: `is_last_step or self.global_steps % save_freq == 0`), at most max_actor_ckpt_to_keep kept."""
    try:
        total, freq = int(launch.get("train_steps") or 0), int(launch.get("save_freq") or -1)
    except (TypeError, ValueError):
        return 0
    if freq <= 0 or total <= from_step:
        return 0
    count = sum(1 for step in range(from_step + 1, total + 1) if step % freq == 0 or step == total)
    keep = tracked_step(value_of(launch.get("extra_overrides"), KEEP_KEY))
    return min(count, keep) if keep and keep > 0 else count


# --------------------------------------------------------------------------- rules

def _gib(number):
    return "%.1f GiB" % (number / GIB)


def not_writable(ckpts, launch):
    """The folder, or the nearest folder that exists to create it in, on a read-only file system or not writable."""
    if not ckpts.get("read"):
        return ("verl_ckpts_dir=%s could not be read on this host (%s). Fix: give an absolute path on storage every node mounts."
                % (launch.get("ckpts_dir"), ckpts.get("msg") or "no absolute path")) if ckpts.get("msg") else ""
    where = ckpts["path"] if ckpts["exists"] else "%s (it does not exist; its nearest existing folder %s)" % (ckpts["path"], ckpts["existing"])
    if ckpts.get("readonly"):
        return ("verl_ckpts_dir=%s is on a read-only file system (%s on %s): verl's first save would fail. Fix: mount it read-write, "
                "or give a folder on writable shared storage." % (where, ckpts["storage"]["fstype"], ckpts["storage"]["mount_point"]))
    if not ckpts.get("writable"):
        return ("verl_ckpts_dir=%s is not writable for the deploy user (uid %s): verl's first save would fail with a permission "
                "error, or the container could not create it. Fix: make it writable (chown/chmod), or give another folder."
                % (where, ckpts.get("euid")))
    return ""


def storage_kind(storage):
    """(kind, family, name) of the storage a read_ckpts_dir() 'storage' is on: kind 'network' (a network or cluster file
    system), 'fuse' (a FUSE file system that is not local) or 'local' (a disk or memory of this host: ext4, xfs,
    overlay, tmpfs, a FUSE view of local files); family groups the types of one storage (nfs and nfs4); name is what
    the summary calls it."""
    fstype = str((storage or {}).get("fstype") or "")
    if fstype in NETWORK_KINDS:
        return ("network",) + NETWORK_KINDS[fstype]
    main, _dot, subtype = fstype.partition(".")
    if main == "fuse" and not _fuse_local(subtype, str((storage or {}).get("source") or "")):
        if subtype in FUSE_KINDS:
            return ("fuse",) + FUSE_KINDS[subtype]
        # Any other FUSE file system (fuse.<subtype>, or plain "fuse" named by its source).
        named = subtype or str(storage.get("source") or "").split("#", maxsplit=1)[0] or "fuse"
        return ("fuse", "fuse." + named, "FUSE (%s)" % named)
    return ("local", fstype or "?", "a local file system (%s)" % (fstype or "?"))


def _fuse_local(subtype, source):
    """Whether a FUSE mount serves this host's own files: a local kind (FUSE_LOCAL), sshfs to this host itself, or a
    plain `fuse` mount (no subtype) whose source is a local path or device."""
    if subtype in FUSE_LOCAL:
        return True
    if subtype == "sshfs" or source.startswith("sshfs#"):
        host = _source_parts(source.split("#", 1)[-1])[0].rpartition("@")[2]
        return bool(LOOPBACK.match(host))
    return not subtype and source.startswith("/")


def _source_parts(source):
    """(server, the storage's name or path) of a mount source: '10.0.0.9:/export' -> ('10.0.0.9', '/export'),
    '//nas/share/sub' -> ('nas', '/share/sub'), 'mon1:6789,mon2:6789:/volumes/a' -> ('mon1:6789,mon2:6789', '/volumes/a'),
    'admin@fsid.cephfs=/volumes/a' -> ('admin@fsid.cephfs', '/volumes/a'), 'server-a:gv0/sub' -> ('server-a', 'gv0/sub'),
    'JuiceFS:myjfs' -> ('JuiceFS', 'myjfs'), 'gpfs0' -> ('', 'gpfs0')."""
    source = str(source or "")
    if source.startswith("//"):
        server, _sep, rest = source[2:].partition("/")
        return server.lower(), "/" + rest
    for mark in (":/", "=/"):
        if mark in source:
            server, _sep, rest = source.rpartition(mark)
            return server.lower(), "/" + rest
    if ":" in source and "/" not in source.split(":", 1)[0]:
        server, _sep, rest = source.partition(":")
        return server.lower(), rest
    return "", source


def _location(storage, name=""):
    """The folder's path inside the storage: the source's path, the mount's root in it and the folder below the mount
    point (so a bind mount of a subfolder and a mount of the whole storage name the same folder alike)."""
    point = str(storage.get("mount_point") or "/")
    existing = str(storage.get("existing") or point)
    below = os.path.relpath(existing, point) if existing.startswith(point) else existing
    root = str(storage.get("root") or "/")
    # Some kernels print an NFS mount's root as the export's full path (root /export/project of source host:/export).
    name = "" if name.startswith("/") and (root == name or root.startswith(name.rstrip("/") + "/")) else name
    parts = [name, root, "" if below == "." else below, str(storage.get("missing") or "")]
    return os.path.normpath("/" + "/".join(part.strip("/") for part in parts if part.strip("/")))


def storage_identity(storage):
    """What is equal on two nodes exactly when the folder is on one storage:
    - a network or cluster file system: its family, the storage's name and the folder in it, and the folder's inode
      (the server's file id; not with CIFS' noserverino). The server part of the source is left out: one server is
      often written as an address on one node and a name on another (storages_apart compares it where the inode cannot
      tell: _root_server);
    - OCFS2/GFS2 on a shared disk: its UUID (else the file system id), the folder and its inode (the disk's own);
    - a FUSE file system: its family, the whole source (GlusterFS: the volume, FUSE_BY_VOLUME) and the folder in it
      (FUSE inode numbers are the daemon's own);
    - a local one: the same kernel (boot id), device, file system id, folder and inode: containers of one host."""
    storage = storage or {}
    kind, family, _name = storage_kind(storage)
    server, name = _source_parts(storage.get("source"))
    if kind == "network" and family in BLOCK_SHARED:
        return (kind, family, storage.get("uuid") or storage.get("fsid"), _location(storage), storage.get("ino"))
    if kind == "network":
        return (kind, family, _location(storage, name), None if storage.get("local_inodes") else storage.get("ino"))
    if kind == "fuse":
        return (kind, family, "" if family in FUSE_BY_VOLUME else server, _location(storage, name))
    return (kind, family, storage.get("boot_id"), storage.get("dev"), storage.get("fsid"), _location(storage), storage.get("ino"))


def _storage_text(ckpts):
    storage = ckpts.get("storage") or {}
    return "%s %s on %s" % (storage.get("fstype") or "?", storage.get("source") or "?", storage.get("mount_point") or "?")


def storage_summary(nodes, launch):
    """One line for the confirmation: which storage verl_ckpts_dir is on ('JuiceFS (fuse.juicefs JuiceFS:myjfs on
    /mnt/jfs), one storage on every node'), or '' when it was not read."""
    read = {host: ckpts for host, ckpts in sorted((nodes or {}).items()) if (ckpts or {}).get("read") and ckpts.get("storage")}
    if not read:
        return ""
    kinds = {}
    for host, ckpts in read.items():
        kinds.setdefault("%s (%s)" % (storage_kind(ckpts["storage"])[2], _storage_text(ckpts)), []).append(host)
    if len(kinds) > 1:  # one storage may be written two ways (two volfile servers, two device names of one disk)
        return "; ".join("%s on %s" % (text, ", ".join(hosts)) for text, hosts in kinds.items()) + (
            "" if storages_apart(read, launch.get("nnodes")) else ", one storage on every node")
    text = next(iter(kinds))
    if (launch.get("nnodes") or 1) < 2 or len(read) < 2:
        return text
    if storages_apart(read, launch.get("nnodes")):
        return text + ", not one storage on every node"
    local = storage_kind(next(iter(read.values()))["storage"])[0] == "local"
    return text + (", one storage on every node (the nodes run on one host's kernel)" if local else ", one storage on every node")


def not_shared(nodes, launch):
    """On a multi-node run, verl_ckpts_dir must be one storage on every node: Megatron's distributed checkpoint is
    written by every rank into the same folder, metadata.json by rank 0 only. nodes: {host: read_ckpts_dir()}."""
    found = storages_apart(nodes, launch.get("nnodes"))
    if not found:
        return ""
    return ("verl_ckpts_dir=%s is not the same storage on every node (%s). Megatron's distributed checkpoint is written by "
            "the ranks of every node into one folder and read back whole, so on separate disks the first save fails "
            "(\"Parent directory .../global_step_<N> does not exist\") or a resume fails (\"... is not a distributed "
            "checkpoint\")%s. Fix: mount one shared file system (NFS, CephFS, Lustre, GPFS, BeeGFS, GlusterFS, JuiceFS, "
            "obsfs...) at the same path on every node, from the same source, and give a folder on it." % (
                launch.get("ckpts_dir"), found["shown"], found["local"]))


def storages_apart(nodes, nnodes):
    """The rule of not_shared(), for any checkpoint folder (verl_ckpts_dir; the comparison's, playbooks/compare.yml):
    None when the folder is one storage on every node that was read (or the run has one node), else {"groups": [[hosts]
    on one storage], "shown": the nodes with their storage, "local": why a local disk does not do}."""
    read = {host: ckpts for host, ckpts in sorted((nodes or {}).items()) if (ckpts or {}).get("read") and ckpts.get("storage")}
    if (nnodes or 1) < 2 or len(read) < 2:
        return None
    groups = {}
    for host, ckpts in read.items():
        groups.setdefault(storage_identity(ckpts["storage"]), []).append(host)
    groups = _split_by_server(groups, read)
    if len(groups) == 1:
        return None
    shown = "; ".join("%s: %s" % (", ".join(hosts), _storage_text(read[hosts[0]])) for hosts in groups.values())
    kinds = {storage_kind(ckpts["storage"])[0] for ckpts in read.values()}
    local_types = sorted({str(ckpts["storage"].get("fstype")) for ckpts in read.values() if storage_kind(ckpts["storage"])[0] == "local"})
    local = "; a local disk (%s) is one storage only for containers of one host" % ", ".join(local_types) if "local" in kinds else ""
    return {"groups": list(groups.values()), "shown": shown, "local": local}


def _root_server(storage):
    """(form, server) of a network mount read at its own root, or None. A first deploy reads the mount point (the folder
    is not there yet), and an exported file system's root has the same inode on every server (2 on ext4, 128 on xfs):
    there the inode cannot tell two servers apart, their names can."""
    kind = storage_kind(storage)[0]
    point = os.path.normpath(str(storage.get("mount_point") or "/"))
    if kind != "network" or storage.get("fstype") in BLOCK_SHARED or str(storage.get("root") or "/") != "/" or \
            os.path.normpath(str(storage.get("existing") or point)) != point:
        return None
    server = _source_parts(storage.get("source"))[0]
    if not server:
        return None
    # Written alike (two addresses, or two names) they can be compared; an address and a name cannot, without asking DNS.
    return ("address" if re.fullmatch(r"[0-9.]+|\[?[0-9a-f:]+\]?", server) else "name", server)


def _split_by_server(groups, read):
    """groups, with a group split by server where its nodes read an export's root through different servers of one form."""
    split = {}
    for identity, hosts in groups.items():
        servers = {host: _root_server(read[host]["storage"]) for host in hosts}
        forms = {}
        for found in servers.values():
            if found:
                forms.setdefault(found[0], set()).add(found[1])
        apart = any(len(names) > 1 for names in forms.values())
        for host in hosts:
            split.setdefault((identity, servers[host] if apart else None), []).append(host)
    return split


def no_space(ckpts, launch, params):
    """Free space on the checkpoint storage for the checkpoints this training writes and keeps."""
    if not ckpts.get("read") or not params or "free_bytes" not in ckpts:
        return ""
    resumed = tracked_step(ckpts.get("tracker")) if launch.get("resume_mode") == "auto" else None
    count = saves_ahead(launch, resumed or 0)
    one = checkpoint_bytes(params, save_contents(launch))
    if not count or not one or ckpts["free_bytes"] >= one * count:
        return ""
    return ("verl_ckpts_dir=%s has %s free on %s, but this training writes %d checkpoint(s) of %s each (%.2fe9 parameters: "
            "bf16 weights 2 B and the optimizer's fp32 master weights and Adam moments 12 B per parameter; verl_train_steps=%s, "
            "verl_save_freq=%s, every one kept): %s. The save would fail with \"No space left on device\". Fix: free space "
            "or give a folder on larger storage, save less often (verl_save_freq), or keep fewer (verl_extra_overrides: "
            "%s=<N>)." % (launch.get("ckpts_dir"), _gib(ckpts["free_bytes"]), _storage_text(ckpts), count, _gib(one),
                          params / 1e9, launch.get("train_steps"), launch.get("save_freq"), _gib(one * count), KEEP_KEY))


def _missing_files(ckpts, step, contents):
    present = set((ckpts.get("step_files") or {}).get(str(step)) or [])
    wanted = COMPLETE_FILES + (MODEL_FILES if "model" in contents else ())
    return [name for name in wanted if name not in present]


def _complete_before(ckpts, step, contents):
    """The newest step folder below step whose files are all there (only the folders read), or None."""
    for older in reversed(ckpts.get("steps") or []):
        if older < step and str(older) in (ckpts.get("step_files") or {}) and not _missing_files(ckpts, older, contents):
            return older
    return None


def resume_broken(ckpts, launch):
    """With verl_resume_mode=auto on the head: the checkpoint verl would resume from must be there and complete."""
    if launch.get("resume_mode") != "auto" or not launch.get("is_head") or not ckpts.get("read") or not ckpts.get("exists"):
        return ""
    path, steps, contents = ckpts["path"], ckpts.get("steps") or [], save_contents(launch)
    step = tracked_step(ckpts.get("tracker"))
    choice = ("Fix: resume from a complete checkpoint with verl_resume_mode=resume_path verl_resume_from_path=%s/global_step_<N>, "
              "or start from step 0 with verl_resume_mode=disable (no checkpoint is deleted)." % path)
    if step is None:
        if not steps:
            return ""
        return ("verl_ckpts_dir=%s holds global_step_%s but no readable %s (%s): with verl_resume_mode=auto verl would start "
                "from step 0 without a word (\"Checkpoint tracker file does not exist\"). %s" % (
                    path, ", global_step_".join(str(s) for s in steps), TRACKER,
                    "it is missing" if ckpts.get("tracker") is None else "it holds %r" % ckpts["tracker"].strip()[:40], choice))
    if step not in steps:
        return ("%s/%s names step %d, but %s/global_step_%d does not exist: verl would start from step 0 without a word "
                "(\"Checkpoint does not exist\"). %s" % (path, TRACKER, step, path, step, choice))
    missing = _missing_files(ckpts, step, contents)
    if not missing:
        return ""
    older = _complete_before(ckpts, step, contents)
    return ("%s/global_step_%d, the checkpoint %s names, is incomplete: %s missing (an interrupted save, or a node that "
            "wrote its part elsewhere); verl_resume_mode=auto would fail on it at every start. %s" % (
                path, step, TRACKER, ", ".join(missing) + (" is" if len(missing) == 1 else " are"),
                choice.replace("global_step_<N>", "global_step_%d" % older) if older is not None else choice))


def newer_than_tracked(ckpts, launch):
    """A warning: a global_step folder newer than the tracker's (a save interrupted before its end); verl resumes from
    the tracker's step and writes that folder again when it gets there."""
    if launch.get("resume_mode") != "auto" or not launch.get("is_head") or not ckpts.get("read"):
        return ""
    step, steps = tracked_step(ckpts.get("tracker")), ckpts.get("steps") or []
    if step is None or not steps or steps[-1] <= step:
        return ""
    return ("%s/global_step_%d is newer than the step %s names (%d): a save that did not finish. verl resumes from step %d "
            "and writes global_step_%d again when it gets there." % (ckpts["path"], steps[-1], TRACKER, step, step, steps[-1]))
