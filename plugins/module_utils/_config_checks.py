# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Private to the verl.deploy collection: may change without notice.
#
# Parallelism and batch-size rules checked before launch. verl's recipe entry points (main_dapo) skip
# verl's own validate_config, and Megatron only fails after minutes of model loading on every node,
# so the launcher re-implements the arithmetic here. The rule ids (R1, R2: the original design's two
# rules; C2 ... C21: verl's, Megatron's and vLLM's) and where each is enforced at run time are listed in
# docs/design.md, "The parallelism rules and their ids". Each rule taken from upstream code names the
# file and line (verl v0.7.0, Megatron-core core_v0.12.1) it comes from.
from __future__ import annotations

from ansible_collections.verl.deploy.plugins.module_utils import _algorithms as algorithms
from ansible_collections.verl.deploy.plugins.module_utils import _versions as versions
from ansible_collections.verl.deploy.plugins.module_utils._features import RECOMPUTE_NUM_LAYERS, VPP_SIZE
from ansible_collections.verl.deploy.plugins.module_utils._hydra_overrides import whole_value_of

# verl defaults that run_training.sh does not render (a verl_extra_overrides line may change them): those that differ
# between releases are the release table's (plugins/module_utils/_versions.py, `defaults`: rollout.max_num_seqs, the
# vLLM engine's max_num_seqs, 1024 up to 0.8.x and 256 from 0.9.0); actor.ppo_max_token_len_per_gpu
# (verl/trainer/config/actor/actor.yaml:33 in 0.7.0, unchanged to 0.9.1), which the ref's and the rollout's
# log_prob_max_token_len_per_gpu follow (verl/trainer/config/ref/ref.yaml:24, verl/trainer/config/rollout/rollout.yaml:95).
VERL_DEFAULTS = {
    "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": 16384,
}
MAX_TOKEN_LEN_KEYS = (
    # (key, which pass reads it, the key it follows when not given)
    ("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "the actor update", None),
    ("actor_rollout_ref.ref.log_prob_max_token_len_per_gpu", "the reference log-prob pass", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
    ("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", "the old log-prob pass",
     "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
)
STRICTER = ("This rule is stricter than verl on purpose: the original design of this deployment keeps it "
            "(verl itself would run this layout).")


def verl_values(extra_overrides, release_defaults=None):
    """The values of the keys in MAX_TOKEN_LEN_KEYS, VERL_DEFAULTS and the release's defaults (release_defaults:
    _versions.defaults(profile); the default profile's when not given) that the training will see."""
    known = dict(VERL_DEFAULTS, **(release_defaults or versions.defaults(versions.DEFAULT_PROFILE)))
    values = {key: whole_value_of(extra_overrides, key, default) for key, default in known.items()}
    for key, _what, follows in MAX_TOKEN_LEN_KEYS:
        values[key] = whole_value_of(extra_overrides, key, values.get(key) if follows is None else values[follows])
    return values


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


# Megatron's uneven pipeline split (TransformerConfig, megatron/core/transformer/transformer_config.py, core_v0.12.1 on;
# verl passes override_transformer_config through: its DeepSeek-V3 and Qwen3-235B recipes set both): the first and the
# last stage hold the given layers, the middle stages the rest, evenly.
_TRANSFORMER = "actor_rollout_ref.actor.megatron.override_transformer_config."
FIRST_STAGE_KEY = _TRANSFORMER + "num_layers_in_first_pipeline_stage"
LAST_STAGE_KEY = _TRANSFORMER + "num_layers_in_last_pipeline_stage"


def edge_stages(c):
    """(first, last): the layers verl_extra_overrides gives the first and the last pipeline stage, each None when not given."""
    return (whole_value_of(c.get("extra_overrides"), FIRST_STAGE_KEY, None), whole_value_of(c.get("extra_overrides"), LAST_STAGE_KEY, None))


def stage_layers(layers, pp, first=None, last=None, vpp=False):
    """(the layers of each pipeline stage, None) as Megatron splits them, or (None, Megatron's words when it refuses)."""
    chunks = VPP_SIZE if vpp and pp >= 2 else 1
    if first is None and last is None:
        if layers % pp:
            return None, "%d layers do not split evenly over %d stages" % (layers, pp)
        if (layers // pp) % chunks:
            return None, "%d layers do not split into %d x %d chunks" % (layers, pp, chunks)
        return [layers // pp] * pp, None
    middle, middle_pp = layers, pp
    for where, given in (("first", first), ("last", last)):
        if given is None:
            continue
        if given <= 0:
            return None, "num_layers_in_%s_pipeline_stage must be larger than 0" % where
        if given % chunks:
            return None, "number of layers at %s stage: %dmust be divisible by virtual pipelineparallel degree %d" % (where, given, chunks)
        middle, middle_pp = middle - given, middle_pp - 1
    if middle_pp <= 0 or middle < 0:
        return None, "%d pipeline stage(s) leave no middle stage for the other %d layers" % (pp, middle)
    if middle % middle_pp:
        return None, ("number of layers at middle stage: %d must be divisible bythe middle pipeline model parallel size %d"
                      % (middle, middle_pp))
    if (middle // middle_pp) % chunks:
        return None, ("number of layers on each middle pipeline rank:%d must be divisible by virtualpipeline parallel degree %d"
                      % (middle // middle_pp, chunks))
    stages = [middle // middle_pp] * middle_pp
    return ([first] if first is not None else []) + stages + ([last] if last is not None else []), None


def uneven_split(layers, pp, vpp=False):
    """(first, last) for Megatron's uneven split that keeps every stage nearest layers / pp (None: none fits)."""
    best = None
    for first_given, last_given in ((True, True), (True, False), (False, True)):
        for middle in range(1, layers + 1):
            rest = layers - middle * (pp - first_given - last_given)
            if rest < first_given + last_given or pp - first_given - last_given < 1:
                continue
            first = -(-rest // 2) if first_given and last_given else (rest if first_given else None)
            last = rest - first if first_given and last_given else (rest if last_given else None)
            stages, _why = stage_layers(layers, pp, first, last, vpp)
            if stages and min(stages) > 0 and (best is None or max(stages) < best[0]):
                best = (max(stages), first, last)
    return best[1:] if best else None


def describe_stages(stages, split):
    """'3 + 14 x 4 + 2 = 61 layers' of a split (first and last as given, the middle stages between)."""
    first, last = split
    middle = stages[(first is not None):len(stages) - (last is not None)]
    parts = ([str(first)] if first is not None else []) + ["%d x %d" % (len(middle), middle[0])] + ([str(last)] if last is not None else [])
    return "%s = %d layers" % (" + ".join(parts), sum(stages))


def uneven_lines(split):
    """The verl_extra_overrides lines of an uneven split."""
    return ["+%s=%d" % (key, value) for key, value in zip((FIRST_STAGE_KEY, LAST_STAGE_KEY), split) if value is not None]


def model_known(c):
    """Whether config.json's numbers are there (the pre-check read the model); before that the shape rules wait."""
    return all(c.get(key) for key in ("num_layers", "num_attention_heads", "num_kv_heads"))


def tp_sizes(c):
    """The tensor parallel sizes the model allows: dividing its attention heads and its KV heads (Megatron:
    "num_query_groups (..) must be a multiple of tensor_model_parallel_size (..)") and its vocabulary (C23)."""
    vocab = c.get("vocab_size")
    return [d for d in _divisors(c["num_kv_heads"]) if c["num_attention_heads"] % d == 0 and not (vocab and vocab % d)]


def valid_tp_pp(c):
    """The (TP, PP) pairs that satisfy every parallelism rule for this cluster and model (without config.json's
    numbers: those the cluster alone allows)."""
    known = model_known(c)
    pairs = []
    for tp in tp_sizes(c) if known else _divisors(c["world_size"]):
        edges = edge_stages(c)
        for pp in _divisors(c["world_size"] // tp) if known and any(edges) else \
                _divisors(c["num_layers"]) if known else [d for d in _divisors(c["world_size"] // tp) if d <= 8]:
            mp = tp * pp
            if mp % c["npu_per_node"] or c["world_size"] % mp:
                continue
            if c["vpp"] and (pp < 2 or (known and stage_layers(c["num_layers"], pp, *edges, vpp=True)[0] is None)):
                continue
            if known and stage_layers(c["num_layers"], pp, *edges)[0] is None:
                continue
            pairs.append((tp, pp))
    return pairs


def _suggest(c):
    pairs = valid_tp_pp(c)
    if not pairs:
        return "No TP/PP pair fits %d NPUs per node x %d node(s) for this model." % (c["npu_per_node"], c["nnodes"])
    return "Pairs that fit: " + ", ".join("TP=%d PP=%d" % p for p in pairs[:6]) + "."


def check_parallelism(c):
    """Return a list of error dicts {rule, variable, value, msg}; empty when the configuration is launchable.

    `c` holds the normalised settings: train_tp, train_pp, gen_tp, npu_per_node, nnodes, world_size,
    train_batch_size, ppo_mini_batch_size, n_resp_per_prompt, ppo_micro_batch_size_per_gpu,
    ref_log_prob_micro_batch_size_per_gpu, rollout_log_prob_micro_batch_size_per_gpu, max_prompt_length,
    max_response_length, overlong_buffer_len, num_layers, num_attention_heads, num_kv_heads, max_position_embeddings,
    vocab_size, hidden_size, num_experts, experts_per_token (config.json's numbers; None before the pre-check read the model,
    then the rules on the model's shape wait), extra_env (verl_extra_env),
    dynamic_bsz, recompute, vpp (booleans from the feature mask), algorithm (a key of the algorithm table, _algorithms.py),
    extra_overrides (verl_extra_overrides, optional: the keys of VERL_DEFAULTS and MAX_TOKEN_LEN_KEYS are read from it),
    verl_defaults (optional: the release's defaults, _versions.defaults(profile); the default profile's when absent).
    """
    errors = []

    def fail(rule, variable, value, msg):
        errors.append({"rule": rule, "variable": variable, "value": value, "msg": msg})

    _rollout_tp_is_training_tp(c, fail)
    _tp_and_pp_fit_the_cluster_and_model(c, fail)
    if not any(error["variable"] == "verl_train_tp" for error in errors):
        # After a TP refusal its fix (the pairs of valid_tp_pp) fits the layers too, and the expert sizes would change with it.
        check_experts(c, fail)
        _layers_split_over_pp(c, fail)
    _vpp_fits(c, fail)
    _recompute_fits(c, fail)
    _batches_split(c, fail)
    check_token_budgets(c, fail)
    check_position_budget(c, fail)
    _overlong_buffer_fits(c, fail)
    check_hccl_buffsize(c, fail)
    return errors


def _rollout_tp_is_training_tp(c, fail):
    """R1: the rollout tensor parallel size equals the training one."""
    tp, gen_tp, world, known = c["train_tp"], c["gen_tp"], c["world_size"], model_known(c)
    if gen_tp != tp:
        # Also what verl (C7: the NPUs split into rollout replicas of gen_tp NPUs) or vLLM (its heads) would refuse:
        # setting verl_gen_tp to the training TP fixes those too.
        verl_refuses = []
        if world % gen_tp:
            verl_refuses.append("verl cannot split the cluster's %d NPUs into rollout replicas of %d NPUs" % (world, gen_tp))
        if known and c["num_attention_heads"] % gen_tp:
            verl_refuses.append("vLLM stops with 'Total number of attention heads (%d) must be divisible by tensor parallel size (%d).'"
                                % (c["num_attention_heads"], gen_tp))
        why = ("; ".join(verl_refuses) + ".") if verl_refuses else STRICTER
        fail("R1", "verl_gen_tp", gen_tp,
             "verl_gen_tp=%d differs from verl_train_tp=%d: the rollout tensor parallel size must equal the training one. %s "
             "Fix: set verl_gen_tp=%d, or leave verl_gen_tp unset (it follows verl_train_tp)." % (gen_tp, tp, why, tp))


def _tp_and_pp_fit_the_cluster_and_model(c, fail):
    """C2, C14, C23, R2: TP x PP divides the cluster, TP the model's heads and vocabulary, and
    TP x PP is a multiple of the NPUs per node.

    One refusal per cause: a TP (or PP) that breaks several rules is refused once, by the first rule below that it
    breaks, whose fix (the pairs of valid_tp_pp, the sizes of tp_sizes) satisfies the rules it stands for."""
    tp, pp, npn, nnodes, world = c["train_tp"], c["train_pp"], c["npu_per_node"], c["nnodes"], c["world_size"]
    layers, known, mp = c["num_layers"], model_known(c), tp * pp
    if world % mp:
        fail("C2", "verl_train_tp", tp,
             "The cluster has %d NPUs (%d node(s) x %d), which is not divisible by verl_train_tp x verl_train_pp = %d x %d = %d. "
             "Fix: choose TP and PP whose product divides %d. %s" % (world, nnodes, npn, tp, pp, mp, world, _suggest(c)))
    elif known and (c["num_attention_heads"] % tp or c["num_kv_heads"] % tp):
        # Megatron-core's TransformerConfig.__post_init__ (megatron/core/transformer/transformer_config.py):
        # "num_attention_heads (..) must be a multiple of tensor_model_parallel_size (..)" and "num_query_groups (..)
        # must be a multiple of tensor_model_parallel_size (..)"; vLLM's ModelConfig.verify_with_parallel_config (the
        # rollout, whose TP is this one, R1): "Total number of attention heads (..) must be divisible by tensor parallel size (..)".
        if c["num_kv_heads"] % tp:
            seen = "Megatron stops after Ray has started on every node with 'num_query_groups (%d) must be a multiple of " \
                   "tensor_model_parallel_size (%d).'" % (c["num_kv_heads"], tp)
        else:
            seen = "Megatron stops after Ray has started on every node with 'num_attention_heads (%d) must be a multiple of " \
                   "tensor_model_parallel_size (%d).'" % (c["num_attention_heads"], tp)
        if c["num_attention_heads"] % tp:
            seen += " (vLLM, for the rollout: 'Total number of attention heads (%d) must be divisible by tensor parallel size (%d).')" % (
                c["num_attention_heads"], tp)
        fail("C14", "verl_train_tp", tp,
             "verl_train_tp=%d does not divide the model's %d attention heads and %d key/value heads (its config.json): %s "
             "Fix: use a verl_train_tp among %s. %s"
             % (tp, c["num_attention_heads"], c["num_kv_heads"], seen, ", ".join(str(d) for d in tp_sizes(c)), _suggest(c)))
    elif known and c.get("vocab_size") and c["vocab_size"] % tp:
        # verl hands Megatron the unpadded vocabulary (verl/models/mcore/model_initializer.py:77, vocab_size=hf_config.vocab_size);
        # megatron/core/tensor_parallel/layers.py VocabParallelEmbedding splits it with utils.divide, whose
        # ensure_divisibility asserts "{} is not divisible by {}". vLLM pads its own embedding, so only the training minds.
        vocab = c["vocab_size"]
        fail("C23", "verl_train_tp", tp,
             "verl_train_tp=%d does not divide the model's vocabulary of %d tokens (vocab_size in its config.json): Megatron splits "
             "the embedding over TP unpadded and stops with 'AssertionError: %d is not divisible by %d'. Fix: use a verl_train_tp "
             "that divides %d (%s). %s" % (tp, vocab, vocab, tp, vocab, ", ".join(str(d) for d in tp_sizes(c)), _suggest(c)))
    elif mp % npn:
        # verl's own rules pass (C2, C14, C23 above); the layers over PP (C11) are the one left to say.
        claim = STRICTER if not (known and layers % pp) else STRICTER.replace(
            " (verl itself would run this layout).", ", and the model's %d layers do not split over verl_train_pp=%d either." % (layers, pp))
        fail("R2", "verl_train_tp", tp,
             "verl_train_tp x verl_train_pp = %d x %d = %d is not a multiple of the NPUs per node (%d, the length of verl_npu_devices). "
             "%s Fix: choose TP and PP whose product is a multiple of %d. %s" % (tp, pp, mp, npn, claim, npn, _suggest(c)))
    # C7 (the NPUs split into rollout replicas of gen_tp NPUs) is R1's or C2's: gen_tp is the training TP, which divides them.


def _layers_split_over_pp(c, fail):
    """C11: the model's layers split over PP: evenly, or as Megatron's uneven first and last stages say."""
    tp, pp, layers = c["train_tp"], c["train_pp"], c["num_layers"]
    edges = edge_stages(c)
    given = any(edge is not None for edge in edges)
    # Without the uneven keys VPP's chunks are _vpp_fits' rule; with them Megatron checks them with the split.
    if not model_known(c) or stage_layers(layers, pp, *edges, vpp=c["vpp"] and given)[0] is not None:
        return
    split = uneven_split(layers, pp, c["vpp"]) if pp >= 2 else None
    uneven = ("; or keep verl_train_pp=%d with Megatron's uneven first and last stages: add %s to verl_extra_overrides (%s)" % (
        pp, " and ".join(uneven_lines(split)), describe_stages(stage_layers(layers, pp, *split)[0], split)) if split else "")
    if given:
        if split:
            fix = "use " + " and ".join(uneven_lines(split))
        elif c["vpp"]:
            fix = "turn bit 6 off (no split of %d layers gives every stage a multiple of %d)" % (layers, VPP_SIZE)
        else:
            fix = "remove those lines"
        fail("C11", "verl_extra_overrides", " ".join(uneven_lines(edges)),
             "verl_extra_overrides splits the model's %d layers over verl_train_pp=%d stages with %s, which Megatron refuses at model "
             "build: 'ValueError: %s'. Fix: %s." % (
                 layers, pp, ", ".join(uneven_lines(edges)), stage_layers(layers, pp, *edges, vpp=c["vpp"])[1], fix))
        return
    fits = [str(p) for t, p in valid_tp_pp(c) if t == tp]
    fail("C11", "verl_train_pp", pp,
         "The model's %d layers (num_hidden_layers in its config.json) cannot be split evenly over verl_train_pp=%d pipeline "
         "stages. Fix: %s%s." % (
             layers, pp, "use a verl_train_pp that divides %d and fits verl_train_tp=%d: %s" % (layers, tp, ", ".join(fits)) if fits
             else "use a verl_train_pp that divides %d (%s)" % (layers, ", ".join(str(d) for d in _divisors(layers) if d <= 16)), uneven))


def _vpp_fits(c, fail):
    """C10, C11: VPP needs PP >= 2 and layers that split into PP x VPP_SIZE chunks."""
    pp, layers, known = c["train_pp"], c["num_layers"], model_known(c)
    if c["vpp"]:
        if pp < 2:
            fail("C10", "verl_feature_mask", "VPP (bit 6)",
                 "VPP (bit 6) needs pipeline parallelism, but verl_train_pp=%d. Fix: set verl_train_pp to 2 or more, or turn bit 6 off." % pp)
        elif known and not any(edge is not None for edge in edge_stages(c)) and layers % pp == 0 and layers % (pp * VPP_SIZE):
            fail("C11", "verl_train_pp", pp,
                 "With VPP (bit 6) the model's %d layers are split into verl_train_pp x %d = %d chunks, which is not even. "
                 "Fix: use a verl_train_pp with %d %% (PP x %d) == 0, or turn bit 6 off." % (layers, VPP_SIZE, pp * VPP_SIZE, layers, VPP_SIZE))


def _recompute_fits(c, fail):
    """C13: each pipeline stage holds the layers Recompute recomputes."""
    pp, layers = c["train_pp"], c["num_layers"]
    split = stage_layers(layers, pp, *edge_stages(c)) if model_known(c) and pp else (None, None)
    if c["recompute"] and split[0]:
        stages = pp * (VPP_SIZE if c["vpp"] and pp >= 2 else 1)
        per_stage = min(split[0]) // (stages // pp)
        if per_stage < RECOMPUTE_NUM_LAYERS:
            fail("C13", "verl_feature_mask", "Recompute (bit 4)",
                 "Recompute (bit 4) recomputes %d layers per pipeline stage, but each stage holds only %d of the model's %d layers "
                 "(verl_train_pp=%d%s). Fix: lower verl_train_pp, or turn bit 4 off." % (
                     RECOMPUTE_NUM_LAYERS, per_stage, layers, pp, ", VPP on" if stages != pp else ""))


def _batches_split(c, fail):
    """C4, C6, C19, C12: the batch arithmetic of verl's Megatron worker."""
    tp, pp, world = c["train_tp"], c["train_pp"], c["world_size"]
    mp = tp * pp
    # verl's Megatron worker turns the mini batch into n x mini / DP sequences per rank.
    bsz, mini, n = c["train_batch_size"], c["ppo_mini_batch_size"], c["n_resp_per_prompt"]
    micro = c["ppo_micro_batch_size_per_gpu"]
    if world % mp == 0:
        dp = world // mp
        if bsz < mini:
            fail("C4", "verl_ppo_mini_batch_size", mini,
                 "verl_ppo_mini_batch_size=%d is larger than verl_train_batch_size=%d. Fix: set verl_ppo_mini_batch_size to at most %d "
                 "(it defaults to verl_train_batch_size)." % (mini, bsz, bsz))
        if (mini * n) % dp:
            fail("C6", "verl_ppo_mini_batch_size", mini,
                 "A mini batch of verl_ppo_mini_batch_size x verl_n_resp_per_prompt = %d x %d = %d sequences cannot be split evenly over "
                 "the %d data-parallel ranks (%d NPUs / (TP %d x PP %d)); verl would stop with 'only support equal chunk'. "
                 "Fix: make %d x %d a multiple of %d (e.g. verl_train_batch_size and verl_ppo_mini_batch_size = %d)." % (
                     mini, n, mini * n, dp, world, tp, pp, mini, n, dp, _round_up(mini, dp // _gcd(dp, n))))
        elif not c["dynamic_bsz"]:
            per_rank = mini * n // dp
            if per_rank % micro:
                fail("C4", "verl_ppo_micro_batch_size_per_gpu", micro,
                     "Each data-parallel rank gets %d sequences per mini batch, which is not a multiple of verl_ppo_micro_batch_size_per_gpu=%d. "
                     "Fix: use a micro batch size that divides %d." % (per_rank, micro, per_rank))
            elif c["vpp"] and pp >= 2:
                check_vpp_micro_batches(c, "verl_ppo_micro_batch_size_per_gpu", micro, per_rank, "mini batch", "the actor update", fail)
        if bsz >= mini and bsz % mini:
            # verl/protocol.py:827 (DataProto.make_iterator, the actor's mini batches at step 1):
            # assert self.batch.batch_size[0] % mini_batch_size == 0, f"... % ... != 0"; each rank holds
            # train_batch x n / DP sequences and splits them by mini x n / DP (verl/workers/megatron_workers.py:334-335).
            seen = " with 'AssertionError: %d %% %d != 0'" % (bsz * n // dp, mini * n // dp) if (mini * n) % dp == 0 else ""
            fail("C19", "verl_ppo_mini_batch_size", mini,
                 "verl_train_batch_size=%d is not a multiple of verl_ppo_mini_batch_size=%d: verl splits each step's batch into mini batches "
                 "and stops at the first update%s. Fix: use a verl_ppo_mini_batch_size that divides %d (e.g. %d), or a "
                 "verl_train_batch_size that is a multiple of %d." % (bsz, mini, seen, bsz, max(d for d in _divisors(bsz) if d <= mini), mini))
        if c["vpp"] and pp >= 2 and not c["dynamic_bsz"] and (bsz * n) % dp == 0:
            per_rank_all = bsz * n // dp
            # The log-prob passes run over each rank's whole share of the step's batch (verl/workers/megatron_workers.py:823-825
            # for the reference model, :846 for the old log-probs), split into micro batches of their own size.
            if algorithms.applies(c.get("algorithm", algorithms.DEFAULT), "reference_model"):
                check_vpp_micro_batches(c, "verl_ref_log_prob_micro_batch_size_per_gpu", c["ref_log_prob_micro_batch_size_per_gpu"],
                                        per_rank_all, "step", "the reference log-prob pass", fail)
            check_vpp_micro_batches(c, "verl_rollout_log_prob_micro_batch_size_per_gpu", c["rollout_log_prob_micro_batch_size_per_gpu"],
                                    per_rank_all, "step", "the old log-prob pass", fail)
        # C3 (verl's validate_config: train_batch x n a multiple of DP x micro batch) follows from C4, C6 and C19 above
        # (train = k x mini, mini x n = DP x per rank, per rank = j x micro): it is never a cause of its own.


def _overlong_buffer_fits(c, fail):
    """C18: the overlong buffer is shorter than the maximum response."""
    # Only the algorithms whose reward manager has the overlong penalty read the buffer (the algorithm table).
    if algorithms.applies(c.get("algorithm", algorithms.DEFAULT), "overlong_buffer") and c["max_response_length"] < c["overlong_buffer_len"]:
        fail("C18", "verl_overlong_buffer_len", c["overlong_buffer_len"],
             "The overlong buffer (verl_overlong_buffer_len=%d) is longer than the maximum response (verl_max_response_length=%d). "
             "Fix: set verl_overlong_buffer_len to at most %d." % (c["overlong_buffer_len"], c["max_response_length"], c["max_response_length"]))


EP_KEY = "actor_rollout_ref.actor.megatron.expert_model_parallel_size"
ETP_KEY = "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size"


def expert_sizes(c):
    """The expert parallel sizes that fit: dividing the model's experts (num_experts; any size before the model is read)
    with expert TP x EP x PP dividing the NPUs."""
    tp, pp, world = c["train_tp"], c["train_pp"], c["world_size"]
    etp = whole_value_of(c.get("extra_overrides"), ETP_KEY, None) or tp
    experts = c.get("num_experts") or 0
    return [ep for ep in _divisors(experts or world) if world % (etp * ep * pp) == 0]


def check_experts(c, fail):
    """C24, C25: the expert parallel size (verl_extra_overrides' actor_rollout_ref.actor.megatron.expert_model_parallel_size,
    verl's default 1; expert TP defaults to the TP, megatron/core/parallel_state.py).

    C24: Megatron's MoE layer (megatron/core/transformer/moe/moe_layer.py, BaseMoELayer.__init__, core_v0.12.1) asserts
    `self.config.num_moe_experts % self.expert_parallel_size == 0` (a bare AssertionError at model build), and a dense
    model with expert parallelism is refused by TransformerConfig ("num_moe_experts must be non None to use expert-parallel").
    C25: initialize_model_parallel raises "RuntimeError: decoder world_size (W) is not divisible by
    expert_tensor_model_pipeline_parallel size (E)" when expert TP x EP x PP does not divide the NPUs."""
    tp, pp, world = c["train_tp"], c["train_pp"], c["world_size"]
    ep = whole_value_of(c.get("extra_overrides"), EP_KEY, 1)
    etp = whole_value_of(c.get("extra_overrides"), ETP_KEY, None) or tp
    experts = c.get("num_experts") or 0
    known = model_known(c)
    if ep <= 1:
        return
    fits = [str(size) for size in expert_sizes(c)]
    if known and not experts:
        fail("C24", "verl_extra_overrides", "%s=%d" % (EP_KEY, ep),
             "verl_extra_overrides sets %s=%d, but the model is dense (its config.json names no experts): Megatron stops at model "
             "build with 'num_moe_experts must be non None to use expert-parallel'. Fix: remove that line from verl_extra_overrides."
             % (EP_KEY, ep))
    elif known and experts % ep:
        fail("C24", "verl_extra_overrides", "%s=%d" % (EP_KEY, ep),
             "verl_extra_overrides sets %s=%d, which does not divide the model's %d experts (num_experts in its config.json): "
             "Megatron's MoE layer stops at model build with a bare AssertionError (assert num_moe_experts %% expert_parallel_size "
             "== 0). Fix: set it to one of %s (each divides %d and, with expert TP %d x PP %d, the %d NPUs)."
             % (EP_KEY, ep, experts, ", ".join(fits) or "none", experts, etp, pp, world))
    elif world % (etp * ep * pp):
        fail("C25", "verl_extra_overrides", "%s=%d" % (EP_KEY, ep),
             "expert TP x EP x PP = %d x %d x %d = %d does not divide the cluster's %d NPUs (EP: %s in verl_extra_overrides): "
             "Megatron stops with 'RuntimeError: decoder world_size (%d) is not divisible by expert_tensor_model_pipeline_parallel "
             "size (%d)'. Fix: set %s to one of %s." % (etp, ep, pp, etp * ep * pp, world, EP_KEY, world, etp * ep * pp, EP_KEY,
                                                        ", ".join(fits) or "1"))


# --------------------------------------------------------------------------- HCCL_BUFFSIZE against the rollout's EP and batch
#
# With expert parallelism in the rollout (actor_rollout_ref.rollout.expert_parallel_size > 1: verl starts vLLM with
# enable_expert_parallel), vLLM-Ascend sends a decode step's tokens to their experts with CANN's MC2 operators
# (MoeDistributeDispatchV2/CombineV2), whose window is the HCCL_BUFFSIZE of the EP communicator (CANN's default 200 MB). The
# window they need is CANN's own formula, printed by their tiling check (cann/ops-transformer,
# moe_distribute_dispatch_v2 tiling: "HCCL_BUFFSIZE is too SMALL, ... NEEDED_HCCL_BUFFSIZE(((maxBs * tokenNeedSizeDispatch *
# ep_worldsize * localMoeExpertNum) + (maxBs * tokenNeedSizeCombine * (k + sharedExpertNum))) * 2) = NMB"): a token is
# Align512(Align32(hidden x 2 B) + 44 B) on dispatch (bf16, its scale and three indices), Align512(hidden x 2 B) on combine.
# maxBs is vLLM-Ascend's MC2 capacity per TP rank: with enforce_eager (rendered for the NPU) min(max_num_seqs, 512) tokens,
# split over the rollout's TP (vllm_ascend ascend_forward_context.set_mc2_tokens_capacity). Too small a window is not always
# named: vllm-ascend#2674 (HCCL_BUFFSIZE=50 with EP >= 16) stopped with "The DDR address of the MTE instruction is out of
# range". Shared experts are left out (sharedExpertNum 0): the need is a lower bound, so a value refused is surely too small.
ROLLOUT_EP_KEY = "actor_rollout_ref.rollout.expert_parallel_size"
HCCL_BUFFSIZE_DEFAULT_MB = 200
MC2_TOKENS_CAP = 512
_MB = 1024 * 1024


def _align(value, unit):
    return -(-value // unit) * unit


def hccl_buffsize_need(c):
    """{'mb': the HCCL_BUFFSIZE (MB) the rollout's MC2 dispatch needs, 'ep', 'tp', 'max_bs', 'seqs', 'local'} for a MoE model
    whose rollout uses expert parallelism, else None. c: hidden_size, num_experts, experts_per_token (config.json), gen_tp,
    extra_overrides, verl_defaults."""
    experts, hidden, k = c.get("num_experts") or 0, c.get("hidden_size") or 0, c.get("experts_per_token") or 0
    ep = whole_value_of(c.get("extra_overrides"), ROLLOUT_EP_KEY, 1)
    if not (experts and hidden and k) or ep <= 1:
        return None
    tp = c.get("gen_tp") or 1
    seqs = verl_values(c.get("extra_overrides"), c.get("verl_defaults"))["actor_rollout_ref.rollout.max_num_seqs"]
    max_bs, local = -(-min(seqs, MC2_TOKENS_CAP) // tp), -(-experts // ep)
    need = (max_bs * _align(_align(2 * hidden, 32) + 44, 512) * ep * local + max_bs * _align(2 * hidden, 512) * k) * 2
    return {"mb": need // _MB + 1, "ep": ep, "tp": tp, "max_bs": max_bs, "seqs": seqs, "local": local}


def check_hccl_buffsize(c, fail):
    """C26: verl_extra_env's HCCL_BUFFSIZE below what the rollout's MC2 dispatch needs (hccl_buffsize_need); unset, the deploy
    exports the need itself (launch_config)."""
    given, need = str((c.get("extra_env") or {}).get("HCCL_BUFFSIZE", "")).strip(), hccl_buffsize_need(c)
    if not need or not given.isdigit() or int(given) >= need["mb"]:
        return
    fail("C26", "verl_extra_env", "HCCL_BUFFSIZE=%s" % given,
         "verl_extra_env sets HCCL_BUFFSIZE=%s (MB), but the rollout's expert parallelism (%s=%d, %d experts per rank, up to %d "
         "tokens per rank: min(max_num_seqs %d, %d) over rollout TP %d) needs at least %d MB for CANN's MC2 dispatch "
         "(NEEDED_HCCL_BUFFSIZE of MoeDistributeDispatchV2); too small a window stops the first rollout with \"HCCL_BUFFSIZE is too "
         "SMALL\" or, as in vllm-ascend#2674 (HCCL_BUFFSIZE=50 at EP 16), \"The DDR address of the MTE instruction is out of "
         "range\". Fix: set HCCL_BUFFSIZE to %d or more in verl_extra_env, or remove it (the deploy then exports %d)."
         % (given, ROLLOUT_EP_KEY, need["ep"], need["local"], need["max_bs"], need["seqs"], MC2_TOKENS_CAP, need["tp"], need["mb"],
            need["mb"], max(need["mb"], HCCL_BUFFSIZE_DEFAULT_MB)))


def check_vpp_micro_batches(c, variable, micro, sequences, unit, what, fail):
    """C12: with VPP, the number of micro batches a pipeline pass runs is a multiple of PP.

    Megatron-core's interleaved schedule (megatron/core/pipeline_parallel/schedules.py:777-797, core_v0.12.1,
    forward_backward_pipelining_with_interleaving, with microbatch_group_size_per_vp_stage defaulting to PP,
    megatron/core/model_parallel_config.py:389-390) refuses fewer than PP micro batches ("The number of contiguous
    micro-batches in a virtual pipeline stage should range in [PP=.. , M=..]") and a remainder modulo PP ("The
    remainder of M (the total micro-batches) divided by N ... should be 0"); older releases said "number of
    microbatches (..) is not divisible by pipeline-model-parallel-size (..) when using interleaved schedule".
    verl hands it the count of its own split (verl/workers/actor/megatron_actor.py:440 and :688-694)."""
    pp = c["train_pp"]
    count = -(-sequences // micro)  # DataProto's split(micro) keeps a shorter last micro batch
    if count % pp == 0:
        return
    fits = [d for d in _divisors(sequences) if (sequences // d) % pp == 0]
    fail("C12", variable, micro,
         "With VPP (bit 6) Megatron's interleaved schedule needs the number of micro batches of %s to be a multiple of "
         "verl_train_pp=%d, but each rank runs %d sequences per %s in micro batches of %s=%d, that is %d micro batch(es). "
         "Fix: %s, or turn bit 6 off." % (
             what, pp, sequences, unit, variable, micro, count,
             "use %s=%s" % (variable, " or ".join(str(d) for d in fits[-3:])) if fits else
             "choose batch sizes that give each rank a multiple of %d sequences" % pp))


def check_token_budgets(c, fail):
    """C20 and C21: the token budgets that a prompt + response must fit (max_prompt_length + max_response_length)."""
    prompt, response = c["max_prompt_length"], c["max_response_length"]
    budget = prompt + response
    values = verl_values(c.get("extra_overrides"), c.get("verl_defaults"))
    max_num_seqs = values["actor_rollout_ref.rollout.max_num_seqs"]
    batched = whole_value_of(c.get("extra_overrides"), "actor_rollout_ref.rollout.max_num_batched_tokens", budget)
    if batched < max_num_seqs:
        # vLLM's SchedulerConfig._verify_args (vllm/config/scheduler.py): "max_num_batched_tokens (X) must be greater than or
        # equal to max_num_seqs (Y)."; verl passes both to the engine (verl/workers/rollout/vllm_rollout/vllm_async_server.py:300-302).
        fail("C20", "verl_max_response_length", response,
             "run_training.sh gives vLLM actor_rollout_ref.rollout.max_num_batched_tokens=%d (verl_max_prompt_length + "
             "verl_max_response_length = %d + %d, or what verl_extra_overrides sets), fewer than verl's max_num_seqs=%d: vLLM refuses "
             "to start with 'max_num_batched_tokens (%d) must be greater than or equal to max_num_seqs (%d).' Fix: make "
             "verl_max_prompt_length + verl_max_response_length at least %d, or add "
             "actor_rollout_ref.rollout.max_num_seqs=%d (or less) to verl_extra_overrides." % (
                 batched, prompt, response, max_num_seqs, batched, max_num_seqs, max_num_seqs, batched))
    if not c["dynamic_bsz"]:
        return
    for key, what, _follows in MAX_TOKEN_LEN_KEYS:
        limit = values[key]
        if budget > limit:
            # verl/utils/seqlen_balancing.py:382-384 (rearrange_micro_batches, every pass with dynamic batch size):
            # assert max_token_len >= max_seq_len, "max_token_len must be greater than the sequence length. ..."; the
            # sequences are padded to max_prompt_length + max_response_length.
            fail("C21", "verl_max_response_length", response,
                 "With Dynamic Batch Size (bit 1) %s packs at most %s=%d tokens per micro batch, but a sequence can be "
                 "verl_max_prompt_length + verl_max_response_length = %d + %d = %d tokens: verl stops mid-run with "
                 "'AssertionError: max_token_len must be greater than the sequence length. Got max_token_len=%d and max_seq_len=%d'. "
                 "Fix: lower verl_max_prompt_length + verl_max_response_length to at most %d, add %s=%d (or more; it costs NPU memory) "
                 "to verl_extra_overrides, or turn bit 1 off." % (
                     what, key, limit, prompt, response, budget, limit, budget, limit, key, budget))
            break


def check_position_budget(c, fail):
    """C22: the prompt + response budget fits the model's max_position_embeddings (config.json).

    verl forces vLLM's max_model_len to the model's max_position_embeddings (verl/workers/rollout/vllm_rollout/
    vllm_async_server.py:198) and then cuts every response at max_model_len - the prompt's tokens (:471-478), so a
    longer budget is not refused there: responses are silently shorter than verl_max_response_length, and the overlong
    buffer penalty (the algorithm table's overlong_buffer rule) measures them against a length they can never reach."""
    positions = c.get("max_position_embeddings")
    prompt, response = c["max_prompt_length"], c["max_response_length"]
    if not positions or prompt + response <= positions:
        return
    fail("C22", "verl_max_response_length", response,
         "verl_max_prompt_length + verl_max_response_length = %d + %d = %d tokens is more than the model's max_position_embeddings "
         "(%d, its config.json): verl sets vLLM's max_model_len to %d and cuts each response to fit, so no response reaches "
         "verl_max_response_length. Fix: lower verl_max_response_length to at most %d (or verl_max_prompt_length), or use a "
         "model with a longer context." % (prompt, response, prompt + response, positions, positions, max(positions - prompt, 0)))


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def _round_up(value, multiple):
    return ((value + multiple - 1) // multiple) * multiple
