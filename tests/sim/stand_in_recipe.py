"""Stand-in for verl-recipe's dapo/main_dapo.py as verl's Ascend images from 0.7.1 on have it (tests/sim).

From verl 0.7.1, recipe/ is a git submodule (verl-project/verl-recipe, verl PR #4795) that verl's wheel does not
hold; verl's Dockerfiles (Dockerfile.ascend_8.5.0_a2_v0.7.1, Dockerfile.ascend_9.0.0_a2_v0.8.0: `git submodule update
--init --remote`; Dockerfile.ascend_9.1.0_a2: `git clone --recursive`, the pinned commit) check out a commit that
imports on one side of verl 0.9 only. This file does the first verl import of verl-recipe's dapo/main_dapo.py at such a
commit, so `python3 -m recipe.dapo.main_dapo` fails in the simulated image as it does in the real one, before Hydra:

* verl 0.7.1 / 0.8.x with a verl-recipe commit from 2026-06-16 on (bab0fa6, ac8b84f ... 48ea0a7):
  ModuleNotFoundError: No module named 'verl.trainer.main_ppo_v0'
* verl 0.9.x with the pinned e7f8895 (2026-04-20):
  ImportError: cannot import name 'create_rl_dataset' from 'verl.trainer.main_ppo'

verl's own trainer, verl.trainer.main_ppo (the stand-in tests/sim/stand_in_main_dapo.py), runs DAPO's reward in
these releases.
"""
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "verl", "version", "version")) as _handle:
    _VERSION = tuple(int(part) for part in _handle.read().strip().split(".")[:2])

if _VERSION >= (0, 9):
    # e7f8895 dapo/main_dapo.py; moved in verl 0.9
    from verl.trainer.main_ppo import create_rl_dataset  # noqa: F401  # pylint: disable=unused-import
else:
    # bab0fa6 dapo/main_dapo.py; verl 0.9's module
    from verl.trainer.main_ppo_v0 import TaskRunner  # noqa: F401  # pylint: disable=unused-import
