#!/bin/sh
# look.sh FOLDER FILE... -- "MODE SHA256 NAME" of each FILE that exists in FOLDER, nothing for the others (or when
# FOLDER does not exist). The one look at the launch files: install.yml runs it in the container, and the container
# stage's check (roles/container/files/npu_stack_check.sh) runs it when it looks first, to save the call.
# Run as `sh -c "$(cat look.sh)" look FOLDER FILE...`.
cd "$1" 2>/dev/null || exit 0
shift
for f; do
    if [ -f "$f" ]; then
        echo "$(stat -c %a "$f") $(sha256sum <"$f" | cut -c1-64) $f"
    fi
done
