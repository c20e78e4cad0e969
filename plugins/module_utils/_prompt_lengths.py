# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
"""The prompts longer than max_prompt_length: what the container stage asks its count for, and the verdict on its answer.

The count runs in the Ray head's training container (roles/container/files/prompt_lengths.py, from npu_stack_check.sh),
where the image's transformers and pyarrow measure each prompt as verl does; the check answers it as its prompts (JSON).

What verl v0.7.0 does with a prompt longer than data.max_prompt_length (read in its source):
- data.filter_overlong_prompts=False (its default, and what this collection renders): nothing cuts it. data.truncation
  is stored by RLHFDataset (verl/utils/dataset/rl_dataset.py) but not applied: the agent loop tokenizes the raw prompt
  itself (verl/experimental/agent_loop/single_turn_agent_loop.py, no truncation) and pads it to max_prompt_length with
  tokenizer.pad(padding="max_length"), which never shortens (agent_loop.py, _agent_loop_postprocess). The batch then
  cannot be stacked: "RuntimeError: Sizes of tensors must match except in dimension 0. Expected size 2048 but got size
  2106 for tensor number 2 in the list." (torch.cat in AgentLoopWorker._postprocess / DataProto.concat; verl issue
  #2069, pull requests #4600 and #5965). With the data shuffled, the first step whose batch holds one stops the
  training, within the first epoch: refused here.
- data.filter_overlong_prompts=True: RLHFDataset drops them when it loads the file (maybe_filter_out_long_prompts,
  "Filtering prompts longer than N tokens"): a warning with the numbers, refused only when too few rows are left for
  one batch (the trainer asserts "Train dataloader is empty!" / "Validation dataloader is empty!",
  verl/trainer/ppo/ray_trainer.py; the train loader drops the last partial batch).
No Ansible imports.
"""
from __future__ import annotations

import json

from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import value_of
from ansible_collections.verl.deploy.plugins.module_utils._control_step import read_answer

FILTER_KEY = "data.filter_overlong_prompts"
# The time the count may take on a first run (an unchanged re-run reads the lengths it kept): bounded so that a huge data
# set cannot hold the deploy; the answer then says how far it got.
COUNT_SECONDS = 120
FILES = (("verl_train_file", "train_file"), ("verl_test_file", "test_file"))


def filtering(launch):
    """Whether verl drops the over-long prompts (data.filter_overlong_prompts in verl_extra_overrides; verl's default off)."""
    return str(value_of(launch.get("extra_overrides"), FILTER_KEY) or "false").strip().strip("'\"").lower() == "true"


def count_inputs(launch):
    """What the container stage gives the count (on the head; elsewhere no files, so no count)."""
    files = [launch.get(key) for _variable, key in FILES if launch.get(key)] if launch.get("is_head") else []
    return {"files": json.dumps(files) if files else "", "max_prompt_length": str(launch.get("max_prompt_length") or ""),
            "prompt_key": launch_prompt_key(launch), "seconds": str(COUNT_SECONDS)}


def answer(output):
    """The check's answer's prompts (the count's JSON) as a dict, or None when there is none."""
    try:
        found = json.loads(read_answer(output)["answer"].get("prompts") or "null")
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _variable(launch, path):
    return next((variable for variable, key in FILES if launch.get(key) == path), "the data file")


def _unrendered(entry):
    if not entry.get("failed"):
        return ""
    return " (%d of them the chat template cannot render: %s)" % (entry["failed"], entry.get("first_error") or "?")


# transformers' words (PreTrainedTokenizerBase.get_chat_template) when the tokenizer has no chat template, e.g. a base
# model's tokenizer_config.json (verl issue #390, deepseek-coder-1.3b-base: "ValueError: Cannot use chat template functions
# because tokenizer.chat_template is not set and no template argument was passed!").
NO_TEMPLATE = "chat_template is not set"


def no_chat_template(launch):
    """The refusal of a tokenizer without a chat template. verl 0.7.0 renders every prompt with it: the agent loop workers
    start with tokenizer.apply_chat_template (verl/utils/chat_template.py, initialize_system_prompt, called from
    verl/experimental/agent_loop/agent_loop.py without data.apply_chat_template_kwargs, so no template given there helps),
    and RLHFDataset's length filter counts a prompt it cannot render as over-long."""
    model = launch.get("model_path") or "verl_model_path"
    return ("The tokenizer of verl_model_path=%s has no chat template, and verl 0.7.0 renders every prompt with it: its rollout "
            "workers stop at start with 'ValueError: Cannot use chat template functions because tokenizer.chat_template is not set "
            "and no template argument was passed!' (a base model's tokenizer often has none). Fix: put the chat template into the "
            "model folder on every node (the chat_template entry of tokenizer_config.json, or a chat_template.jinja file, e.g. "
            "from the model's instruct release), or use a model folder whose tokenizer has one." % model)


def _file(entry, launch, limit):
    """(problems, warnings, notes) of one file's count."""
    path, variable = entry.get("path", "?"), _variable(launch, entry.get("path"))
    where = "%s (%s)" % (path, variable)
    if NO_TEMPLATE in str(entry.get("first_error") or ""):
        return [no_chat_template(launch)], [], []
    if entry.get("failed") and not entry.get("longest") and entry.get("failed") >= entry.get("rows", 0):
        # Not one prompt rendered: no max_prompt_length helps, the rows' prompt column is not what the template reads.
        return ["None of the %d prompts in %s can be rendered by the model's chat template (%s): verl counts each as longer "
                "than max_prompt_length and its rollout cannot render them either. Fix: give the %s column of each row as verl's "
                "format has it, a list of {\"role\": ..., \"content\": ...} messages (or name the column that holds them with "
                "data.prompt_key=<column> in verl_extra_overrides)." % (
                    entry["failed"], where, entry.get("first_error") or "?", launch_prompt_key(launch))], [], []
    if entry.get("error"):
        return [], ["The prompts of %s were not counted: %s. A prompt longer than max_prompt_length %d tokens stops verl's training "
                    "at its first rollout; the count runs in the head's container with the image's transformers and pyarrow."
                    % (where, entry["error"], limit)], []
    rows, over, longest = entry.get("rows", 0), entry.get("over", 0), entry.get("longest", 0)
    counted = "%d of %d prompts counted within %d s (the next run goes on from there)" % (
        entry.get("counted", 0), rows, COUNT_SECONDS) if entry.get("partial") else ""
    if not over:
        if counted:
            return [], ["In %s, %s: none of them longer than max_prompt_length %d tokens (the longest %d)." % (where, counted, limit, longest)], []
        return [], [], ["%s: %d prompts, the longest %d tokens (max_prompt_length %d)." % (path, rows, longest, limit)]
    of = "%d of the %d counted" % (over, entry.get("counted", 0)) if counted else "%d of %d" % (over, rows)
    if not filtering(launch):
        # Rows the template cannot render are over-long whatever the limit: raising it fixes only the measured ones.
        also = " (and fix the %d row(s) the chat template cannot render, or let verl drop them)" % entry["failed"] if entry.get("failed") else ""
        if longest <= limit:
            raise_it = "let verl drop them when it loads the file (%s=True in verl_extra_overrides), or fix those rows" % FILTER_KEY
        else:
            raise_it = ("raise verl_max_prompt_length to at least %d (prompt + response must still fit the model)%s, or let verl drop "
                        "them when it loads the file (%s=True in verl_extra_overrides), or filter the data" % (longest, also, FILTER_KEY))
        return ["%s prompts in %s are longer than max_prompt_length %d tokens (the longest %d, with the chat template)%s: verl 0.7.0 "
                "does not cut them (data.truncation is not applied by its agent loop) and the training stops at the first rollout "
                "whose batch holds one, with 'RuntimeError: Sizes of tensors must match except in dimension 0. Expected size %d but "
                "got size %d'. Fix: %s."
                % (of, where, limit, longest, _unrendered(entry), limit, max(longest, limit + 1), raise_it)], [], []
    left = rows - over
    wanted = int(launch.get("train_batch_size") or 1) if variable == "verl_train_file" else 1
    if not counted and left < wanted:
        message = "Train dataloader is empty!" if variable == "verl_train_file" else "Validation dataloader is empty!"
        return ["%s prompts in %s are longer than max_prompt_length %d tokens (the longest %d)%s, and %s=True drops them: %d row(s) "
                "are left, fewer than %s, so verl stops before the first step ('AssertionError: %s'). Fix: raise "
                "verl_max_prompt_length to at least %d, or use data with shorter prompts."
                % (of, where, limit, longest, _unrendered(entry), FILTER_KEY, left,
                   "one batch (train_batch_size %d)" % wanted if wanted > 1 else "one", message, longest)], [], []
    return [], ["verl drops %s prompts of %s when it loads it: they are longer than max_prompt_length %d tokens (the longest %d)%s "
                "and %s=True.%s" % (of, where, limit, longest, _unrendered(entry), FILTER_KEY, " " + counted + "." if counted else "")], []


def launch_prompt_key(launch):
    return value_of(launch.get("extra_overrides"), "data.prompt_key") or "prompt"


def verdict(output, launch):
    """{'problems', 'warnings', 'notes', 'summary'} of the count's answer in `output` (the container stage's check)."""
    found = answer(output)
    result = {"problems": [], "warnings": [], "notes": [], "summary": ""}
    if found is None:
        if count_inputs(launch)["files"]:
            result["warnings"].append("The prompts of verl_train_file and verl_test_file were not counted: the container stage's "
                                      "check answered no prompts.")
        result["summary"] = "; ".join(result["warnings"])
        return result
    limit = int(found.get("max_prompt_length") or launch.get("max_prompt_length") or 0)
    if found.get("error"):
        result["warnings"].append("The prompts of verl_train_file and verl_test_file were not counted: %s." % found["error"])
    for entry in found.get("files") or []:
        problems, warnings, notes = _file(entry, launch, limit)
        result["problems"] += [problem for problem in problems if problem not in result["problems"]]  # the tokenizer's: once
        result["warnings"] += warnings
        result["notes"] += notes
    result["summary"] = " ".join(result["problems"] + result["warnings"] + result["notes"])
    return result
