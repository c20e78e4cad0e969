# -*- coding: utf-8 -*-
# SPDX-License-Identifier: GPL-3.0-or-later
"""The launch_record filter: the record a training starts from, kept on the head for the next run to compare."""
from __future__ import annotations

import hashlib
import json

from ansible_collections.verl.deploy.plugins.filter.launch_record import FilterModule
from helpers.launch_helpers import SECRET_KEY, SWANLAB_ON, launch_ok

launch_record = FilterModule().filters()["launch_record"]


def test_the_record_is_json_and_holds_the_scripts_checksum_not_the_key():
    script = "#!/bin/bash\npython3 -m verl.trainer.main_ppo\n"
    record = launch_record(launch_ok(api_key=SECRET_KEY, **SWANLAB_ON), script)
    assert json.loads(json.dumps(record)) == record  # what the head keeps and the next run reads back
    assert record["run_training_sha256"] == hashlib.sha256(script.encode()).hexdigest()
    assert SECRET_KEY not in json.dumps(record)
