# shellcheck shell=sh
# install.yml's one call on the host: arguments STAGE CONTAINER WORKDIR; on stdin one line per file,
# "MODE NAME BASE64". Each file is written to STAGE (0700) and copied into the container's WORKDIR.
set -eu
stage="$1" container="$2" workdir="$3"
umask 077
mkdir -p "${stage}"
chmod 0700 "${stage}"
docker exec "${container}" mkdir -p "${workdir}"
while read -r mode name data; do
    [ -n "${name}" ] || continue
    printf '%s' "${data}" | base64 -d >"${stage}/.${name}.new"
    chmod "${mode}" "${stage}/.${name}.new"
    mv -f "${stage}/.${name}.new" "${stage}/${name}"
    docker cp "${stage}/${name}" "${container}:${workdir}/${name}"
    echo "installed ${workdir}/${name}"
done
