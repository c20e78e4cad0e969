"""Log in to a SwanLab server with the key in a protected file (run inside the training container).

    python3 - KEY_FILE HOST < swanlab_login.py

The key is read from KEY_FILE (mode 0600), so it never appears in an argument list or the output.
"""
import sys

import swanlab


def main(key_file, host):
    with open(key_file, encoding="utf-8") as handle:
        key = handle.read().strip()
    swanlab.login(api_key=key, host=host, save=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
