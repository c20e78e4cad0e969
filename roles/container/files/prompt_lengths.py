# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The prompts longer than max_prompt_length, counted in the Ray head's training container as verl v0.7.0 measures them.

Run by npu_stack_check.sh (python3 -c, in the container stage's one call on the head) with:
  VERL_PROMPT_FILES       JSON list of the parquet files (verl_train_file, verl_test_file)
  VERL_MODEL_PATH         the model folder, whose tokenizer verl uses (verl_model_path)
  VERL_MAX_PROMPT_LENGTH  data.max_prompt_length
  VERL_PROMPT_KEY         data.prompt_key (verl's default "prompt")
  VERL_PROMPT_SECONDS     the time the count may take (then it says how far it got)
  VERL_PROMPT_CACHE       the folder of the counts kept for a re-run (default ~/.cache/verl-deploy/prompt-lengths)
It writes its answer, JSON, to file descriptor 3 (npu_stack_check.sh's prompts; plugins/module_utils/_prompt_lengths.py
judges it), and always exits 0: a file it cannot count is reported in the answer, never a failure of the stage.

How verl v0.7.0 measures a prompt (verl/utils/dataset/rl_dataset.py, RLHFDataset.maybe_filter_out_long_prompts, and the
agent loop that tokenizes it for the rollout, verl/experimental/agent_loop/agent_loop.py, apply_chat_template): the row's
prompt column (a list of {role, content} messages, read by `datasets` from the parquet file, i.e. Arrow) through
`tokenizer.apply_chat_template(messages, add_generation_prompt=True)` (tokenize=True), its length in tokens; a row the
template cannot render counts as longer than max_prompt_length. The tokenizer is transformers' AutoTokenizer of the model
folder (verl/utils/tokenizer.py, hf_tokenizer). Here the template renders a batch of rows as text and the fast tokenizer
encodes them with add_special_tokens=False, which is what apply_chat_template(tokenize=True) itself does in transformers
4.57 (it renders, then calls the tokenizer with add_special_tokens=False), so the lengths are the same.

An unchanged re-run reads the lengths kept from the last count: keyed by the file's path, size and mtime, the tokenizer
files' sizes and mtimes, and the prompt key; the lengths are kept, so another max_prompt_length needs no new count.
A cache hit imports neither pyarrow nor transformers. A count that reaches VERL_PROMPT_SECONDS stops after its batch and
keeps what it counted: the next run goes on from there.
"""
from __future__ import annotations

import bisect
import hashlib
import json
import os
import sys
import time

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "chat_template.jinja",
                   "chat_template.json", "special_tokens_map.json", "added_tokens.json")
BATCH_ROWS = 512


def _stamp(path):
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_size, info.st_mtime_ns]


def cache_key(path, model_path, prompt_key):
    """The key of one file's lengths: what the count depends on, by size and mtime (never by reading the files)."""
    tokenizer = [[name, _stamp(os.path.join(model_path, name))] for name in TOKENIZER_FILES]
    text = json.dumps([os.path.abspath(path), _stamp(path), os.path.abspath(model_path), tokenizer, prompt_key, 1])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def summary(path, lengths, failed, first_error, limit):
    """One file's answer from its sorted lengths: rows, those over limit (and the rows that failed), the longest."""
    over = len(lengths) - bisect.bisect_right(lengths, limit)
    return {"path": path, "rows": len(lengths) + failed, "over": over + failed, "longest": lengths[-1] if lengths else 0,
            "failed": failed, "first_error": first_error}


def _error(exc):
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "%s: %s" % (type(exc).__name__, lines[0][:300] if lines else "")


class Counter:
    """The tokenizer, loaded once for both files (transformers' AutoTokenizer, as verl's hf_tokenizer)."""

    def __init__(self, model_path):
        self.model_path = model_path
        self.tokenizer = None

    def load(self):
        if self.tokenizer is None:
            from transformers import AutoTokenizer  # pylint: disable=import-outside-toplevel

            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        return self.tokenizer

    def lengths(self, rows):
        """The token length of each row's messages, or None for a row the template cannot render (verl: counted as over)."""
        tokenizer = self.load()
        try:
            texts = tokenizer.apply_chat_template(rows, add_generation_prompt=True, tokenize=False)
            return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]], None
        except Exception:  # pylint: disable=broad-except  # one bad row: measure them one by one, as verl does
            found, first = [], None
            for row in rows:
                try:
                    found.append(len(tokenizer.apply_chat_template(row, add_generation_prompt=True, tokenize=True)))
                except Exception as exc:  # pylint: disable=broad-except  # verl's doc2len: max_prompt_length + 1
                    found.append(None)
                    first = first or _error(exc)
            return found, first


def count_file(path, prompt_key, counter, deadline, kept=None):
    """{'lengths': sorted, 'failed', 'first_error', 'done'} of one parquet file, with 'partial': True when the deadline came
    first. kept: such a partial answer of an earlier run, which this one goes on from (its first 'done' rows are skipped)."""
    import pyarrow.parquet as pq  # pylint: disable=import-outside-toplevel

    parquet = pq.ParquetFile(path)
    if prompt_key not in parquet.schema_arrow.names:
        raise KeyError("it has no column %r (its columns: %s)" % (prompt_key, ", ".join(parquet.schema_arrow.names)))
    kept = kept or {}
    lengths, failed, first, done = list(kept.get("lengths") or []), kept.get("failed", 0), kept.get("first_error"), 0
    skip, total = kept.get("done", 0), parquet.metadata.num_rows
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=[prompt_key]):
        rows = batch.column(0).to_pylist()[max(0, skip - done):]
        done += batch.num_rows
        if not rows:
            continue
        found, error = counter.lengths(rows)
        lengths += [length for length in found if length is not None]
        failed += sum(1 for length in found if length is None)
        first = first or error
        if time.monotonic() > deadline and done < total:
            return {"lengths": sorted(lengths), "failed": failed, "first_error": first, "done": done, "total": total, "partial": True}
    return {"lengths": sorted(lengths), "failed": failed, "first_error": first, "done": total, "total": total}


def _keep(kept, read):
    try:
        os.makedirs(os.path.dirname(kept), exist_ok=True)
        with open(kept + ".tmp", "w") as handle:
            json.dump(read, handle)
        os.replace(kept + ".tmp", kept)
    except OSError:  # a read-only home: the next run counts again
        pass


def main(env):
    files = json.loads(env.get("VERL_PROMPT_FILES") or "[]")
    model_path = env.get("VERL_MODEL_PATH") or ""
    prompt_key = env.get("VERL_PROMPT_KEY") or "prompt"
    limit = int(env.get("VERL_MAX_PROMPT_LENGTH") or 0)
    seconds = float(env.get("VERL_PROMPT_SECONDS") or 120)
    cache = env.get("VERL_PROMPT_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "verl-deploy", "prompt-lengths")
    deadline = time.monotonic() + seconds
    counter = Counter(model_path)
    answer = {"max_prompt_length": limit, "prompt_key": prompt_key, "seconds": seconds, "files": []}
    for path in files:
        kept = os.path.join(cache, cache_key(path, model_path, prompt_key) + ".json")
        try:
            with open(kept) as handle:
                read = json.load(handle)
        except (OSError, ValueError):
            read = None
        if not isinstance(read, dict) or not isinstance(read.get("lengths"), list) or not isinstance(read.get("failed"), int):
            read = None
        if read and not read.get("partial"):
            answer["files"].append(dict(summary(path, read["lengths"], read["failed"], read["first_error"], limit), cached=True))
            continue
        started = time.monotonic()
        try:
            read = count_file(path, prompt_key, counter, deadline, read)
        except BaseException as exc:  # pylint: disable=broad-except  # no pyarrow, an unreadable file, a tokenizer that does not load
            answer["files"].append({"path": path, "error": _error(exc)})
            continue
        _keep(kept, read)
        found = dict(summary(path, read["lengths"], read["failed"], read["first_error"], limit), cached=False,
                     seconds=round(time.monotonic() - started, 1))
        if read.get("partial"):
            found.update(partial=True, rows=read["total"], counted=read["done"])
        answer["files"].append(found)
    with os.fdopen(3, "w") as out:  # the check's answer channel (npu_stack_check.sh): stdout is the libraries'
        out.write(json.dumps(answer, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(os.environ))
