#!/usr/bin/env bash
# The verl image of another release than the default (or of any release without some of its packages, without.txt): the
# default's image with that release's checkout layout (/verl: config tree, config checks, markers, version string,
# recipe/) in place of the default's, in one layer.
# Run in the default verl image with the context (/ctx) mounted.
set -eux
rm -rf /verl /opt/sim/stand-ins
mkdir -p /verl /opt/sim
cp -R /ctx/verl/. /verl/
cp -R /ctx/ascend/. /usr/local/Ascend/
site="$(/opt/verl-venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp -R /ctx/site/. "${site}/"
# An image built without some of its packages (simcluster.py --without): removed from the default image's site-packages.
if [ -f /ctx/without.txt ]; then
    while read -r name; do rm -rf "${site:?}/${name}"; done </ctx/without.txt
fi
cp -R /ctx/stand-ins /opt/sim/stand-ins
chmod -R a+rX /verl /usr/local/Ascend
rm -rf /root/.cache /tmp/*
