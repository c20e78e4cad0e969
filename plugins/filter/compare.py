# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
from __future__ import annotations

DOCUMENTATION = r"""
name: compare
short_description: The steps of the mask comparison (playbooks/compare.yml) that decide, on the controller
version_added: 0.1.0
description:
  - One filter for the comparison's decisions, each in C(plugins/module_utils/_compare.py); O(what) picks one.
  - C(plan) (O(_input) the C(hostvars)) - the masks to compare and, for each, what the settings check
    (the one deploy.yml and check.yml run, with the comparison's own settings applied) refuses; a problem every mask has
    is the settings' own and stops the comparison; the state's fingerprint. C(plan_lines) the plan in words; C(to_run)
    (O(_input) the plan's rows; then the state's results and C(verl_compare_retry_failed)) the masks left to train.
  - C(measure) (O(_input) a training log's text) - one mask's record from verl's per-step metrics; C(record_line) it in words.
  - C(report) (O(_input) the results by mask) - the table, the winner and the files' texts (Markdown, JSON, HTML).
  - C(state) (O(_input) the state file's text) and C(save_state) (O(_input) the results; then the fingerprint, whether the
    user's training ran, the comparison's lock identity, and the head's read of the user's training) - resume.
  - C(restore_plan) (O(_input) the head's read of the user's training before the comparison; then the settings table's spec
    and rules) - the settings the deploy that starts it again gets last, from its launch record, or why it cannot be started
    as it ran; C(shown_command) (O(_input) a deploy's argv; then the C(hostvars), the head and the settings' spec) that command
    to show, without the extra vars that name or hold a secret;
    C(restore_failed) (O(_input) that plan) the line that says it was not started again, why, and the command that starts it.
  - C(deploy_argv) (O(_input) the deploy playbook's path) - the command line of one deploy, with this run's inventory,
    options and extra vars; C(cli_problems) what of this run's command line a deploy cannot be given; C(cwd) the folder
    this run was started in (a deploy runs there, with this run's configuration file).
  - C(last_words) (O(_input) a deploy's output) - the line that says why it stopped; C(rescued) (O(_input) the failed
    result of a run's step, then the task's name and C(verl_compare_timeout)) why that run failed.
  - C(ckpts_not_shared) (O(_input) each node's read of the comparison's checkpoint folder, C(node_facts)' C(ckpts), by host)
    - '' or the refusal of a folder that is not one storage on every node (the rule verl_ckpts_dir has).
  - The smoke launch (playbooks/smoke.yml, C(plugins/module_utils/_smoke.py)) - C(smoke_record) (O(_input) a training's log)
    one of its two trainings; C(smoke_verdict) (O(_input) the save run's record) what they proved and where they stopped;
    C(smoke_lines) (O(_input) the verdict) it in words.
author:
  - verl-deploy maintainers (!UNKNOWN)
options:
  _input:
    description: What O(what) works on (see the description).
    type: raw
    required: true
  what:
    description: The step.
    type: str
    required: true
    choices: [plan, plan_lines, to_run, measure, record_line, report, state, save_state, deploy_argv, cli_problems, cwd, last_words, rescued,
              ckpts_not_shared, smoke_record, smoke_verdict, smoke_lines, restore_plan, shown_command, restore_failed]
"""

EXAMPLES = r"""
- name: Plan the comparison
  ansible.builtin.set_fact:
    _compare_plan: >-
      {{ hostvars | verl.deploy.compare('plan', masks=masks, head=groups | verl.deploy.ray_head,
         workers=groups | verl.deploy.ray_workers, spec=spec, rules=rules, overrides=overrides) }}
"""

RETURN = r"""
_value:
  description: The step's result (see the description).
  type: raw
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.verl.deploy.plugins.filter.settings_problems import given, head_addresses, plain


def _plan(hostvars, masks, head, spec, rules, workers=(), overrides=None, measured=(), single=False):
    """{"problems": [arguments or settings that stop it], "rows": the plan, "fingerprint"}; single: `masks` is the one
    mask of the smoke launch (checked as `mask`, no shorthands)."""
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare
    from ansible_collections.verl.deploy.plugins.module_utils import _secrets as secrets
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import check_inventory
    try:
        wanted = compare.single_mask(plain(masks)) if single else compare.parse_masks(plain(masks))
    except compare.CompareError as error:
        return {"problems": [str(error)], "rows": [], "fingerprint": ""}
    spec, rules, overrides = plain(spec), plain(rules), plain(overrides or {})
    nodes = [head] + [w for w in dict.fromkeys(workers or ()) if w != head]
    forms = set()
    hosts = {host: given(hostvars, host, spec, forms) for host in nodes}
    for found in hosts.values():
        found["settings"].update(overrides)
    addresses = head_addresses(hostvars[head], head)
    by_mask = {}
    # One mask alone: the baseline's check beside it tells the settings' problems (a folder, a number) from the mask's.
    baseline = [(compare.BASELINE, "")] if len(wanted) == 1 and wanted[0][0] != compare.BASELINE else []
    for mask, _origin in wanted + baseline:
        masked = {h: dict(g, mask=mask, settings=dict(g["settings"], verl_feature_mask=mask)) for h, g in hosts.items()}
        problems = check_inventory(masked, spec, rules, addresses)
        by_mask[mask] = [p["text"] for p in secrets.redact(problems, tuple(sorted(forms, key=len, reverse=True)))]
    common, own = compare.split_refusals(by_mask)
    if baseline:
        del own[compare.BASELINE]
    rows = compare.plan(wanted, own, set(measured or ()))
    if wanted and not rows:
        common = common or ["the settings refuse every mask"]
    return {"problems": common, "rows": rows, "fingerprint": compare.fingerprint(hosts[head]["settings"])}


def _deploy_argv(playbook, python, inventories=(), extra_files=()):
    from ansible import context  # the command line of this run, as ansible-playbook parsed it
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare

    return compare.deploy_argv(dict(context.CLIARGS), python, playbook, inventories, extra_files)


def _cwd(_ignored):
    import os  # the controller's working folder, where the comparison was started (a relative path of it means the same)

    return os.getcwd()


def _cli_problems(_ignored):
    from ansible import context
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare

    return compare.cli_problems(dict(context.CLIARGS))


def _restore_plan(read, spec, rules):
    from ansible import context  # this run's extra vars, whose settings the restore's file replaces
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare
    from ansible_collections.verl.deploy.plugins.module_utils._launch_config import table

    given = []
    for extra in context.CLIARGS.get("extra_vars") or ():
        given.append(str(extra))
        if str(extra).startswith("@"):
            try:
                with open(str(extra)[1:], encoding="utf-8", errors="replace") as handle:
                    given.append(handle.read())
            except OSError:
                pass
    return compare.restore_plan(plain(read), table(plain(spec), plain(rules)), "\n".join(given))


def _shown_command(argv, hostvars, head, spec):
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare
    from ansible_collections.verl.deploy.plugins.module_utils._secrets import SECRETS

    forms = set()  # the secrets' values as the head sees them, in each of their forms (given() collects them)
    given(hostvars, head, plain(spec), forms)
    return compare.shown_command(plain(argv), tuple(SECRETS), tuple(sorted(forms, key=len, reverse=True)))


def _report(results, rows, title, baseline=None, extra=None):
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare
    result = compare.report(plain(rows), plain(results), baseline)
    return dict(result, markdown=compare.markdown(result, title), json=compare.to_json(result, title, plain(extra or {})),
                html=compare.to_html(result, title))


def _smoke_record(text, run, outcome, seconds, listing, message=""):
    from ansible_collections.verl.deploy.plugins.module_utils import _smoke as smoke
    return smoke.record(run, text, outcome, int(seconds or 0), listing, message)


def _smoke_verdict(save, resume=None):
    from ansible_collections.verl.deploy.plugins.module_utils import _smoke as smoke
    return smoke.verdict(plain(save), plain(resume) if resume else None)


def _smoke_lines(result, save, resume, mask, folder):
    from ansible_collections.verl.deploy.plugins.module_utils import _smoke as smoke
    return smoke.lines(plain(result), plain(save), plain(resume) if resume else None, mask, folder)


def _steps():
    from ansible_collections.verl.deploy.plugins.module_utils import _compare as compare
    return {
        "plan": _plan,
        "plan_lines": lambda rows, results, retry_failed=False: compare.plan_lines(plain(rows), plain(results), retry_failed),
        "to_run": lambda rows, results, retry_failed=False: compare.to_run(plain(rows), plain(results), retry_failed),
        "measure": lambda text, mask, warmup, wanted, outcome, message="": compare.measure(mask, text, warmup, wanted, outcome, message),
        "record_line": compare.record_line,
        "report": _report,
        "state": compare.load_state,
        "save_state": lambda results, fingerprint, user_training=None, lock=None, user_read=None: compare.save_state(
            plain(results), fingerprint, user_training, plain(lock), plain(user_read)),
        "restore_plan": _restore_plan,
        "shown_command": _shown_command,
        "restore_failed": lambda plan, said_as, deploy, command, cwd, folder: compare.restore_failed(
            plain(plan), said_as, plain(deploy), command, cwd, folder),
        "deploy_argv": _deploy_argv,
        "cli_problems": _cli_problems,
        "cwd": _cwd,
        "last_words": compare.last_words,
        "rescued": compare.rescued,
        "ckpts_not_shared": lambda reads, folder, log_dir, nnodes: compare.ckpts_not_shared(plain(reads), folder, log_dir, int(nnodes)),
        "smoke_record": _smoke_record,
        "smoke_verdict": _smoke_verdict,
        "smoke_lines": _smoke_lines,
    }


def compare_step(value, what, *args, **kwargs):
    steps = _steps()
    if what not in steps:
        raise AnsibleFilterError("verl.deploy.compare: unknown step %r; use one of %s" % (what, ", ".join(steps)))
    return steps[what](value, *args, **kwargs)


class FilterModule:
    def filters(self):
        return {"compare": compare_step}
