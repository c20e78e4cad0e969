"""Check that SwanLab's stored login names the server (run inside the training container).

    python3 - HOST < swanlab_check_login.py

swanlab 0.10 stores the login in ~/.swanlab/.netrc (machine: the API host); older SDKs in config.json.
Exits non-zero, saying what it found, when the login is missing or for another server.
"""
import netrc
import os
import sys
from urllib.parse import urlsplit


def main(host):
    home = os.environ.get("SWANLAB_ROOT") or os.path.expanduser("~/.swanlab")
    path = os.path.join(home, ".netrc")
    want = urlsplit(host).netloc
    if os.path.isfile(path):
        hosts = list(netrc.netrc(path).hosts)
        if any(want and want in name for name in hosts):
            return None
        return "%s holds no login for %s (it has: %s)" % (path, want, ", ".join(hosts) or "nothing")
    if os.path.isfile(os.path.join(home, "config.json")):
        return None
    return "no stored SwanLab login in %s" % home


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
