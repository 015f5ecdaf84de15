"""Checks a parc-plan --json document against docs/parc-plan.md.

Reads the document on stdin and fails, naming the key, on a missing key or
a value of the wrong type, so that a change of the schema shows up here and
in the documentation together.

    parc-plan --json recipe.yaml | %python %S/Inputs/check-plan-json.py fits
"""

import json
import sys

INT = int
STR = str
BOOL = bool
NULL = type(None)
NUM = (INT, float)


def fail(path, message):
    sys.exit("check-plan-json.py: %s: %s" % (path, message))


def check(value, schema, path):
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            fail(path, "expected an object")
        for key, sub in schema.items():
            if key not in value:
                fail(path, "missing key '%s'" % key)
            check(value[key], sub, path + "." + key)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            fail(path, "expected a list")
        for i, item in enumerate(value):
            check(item, schema[0], "%s[%d]" % (path, i))
    elif isinstance(schema, tuple):
        # (X, NULL): null, or else checked against X for a precise message.
        if value is None and NULL in schema:
            return
        others = [s for s in schema if s is not NULL]
        if len(others) == 1:
            check(value, others[0], path)
        elif not any(_matches(value, s) for s in others):
            fail(path, "unexpected %r" % (value,))
    elif not _matches(value, schema):
        fail(path, "expected %s, got %r" % (schema.__name__, value))


def _matches(value, schema):
    if schema is INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(schema, type):
        return isinstance(value, schema)
    try:
        check(value, schema, "")
        return True
    except SystemExit:
        return False


BREAKDOWN = {
    key: INT
    for key in [
        "sharded_parameters",
        "unsharded_parameters",
        "gradients",
        "optimizer_state",
        "saved_activations",
        "recompute_working_set",
        "logits_and_loss",
        "fixed_overhead",
    ]
}
MODEL = {
    "name": STR,
    "class": STR,
    "source": (STR, NULL),
    "file": STR,
    "parameters": INT,
    "trainable_parameters": INT,
    "stacks": ([{"name": STR, "path": STR, "layers": INT}], NULL),
}
PLAN = {
    "world_size": INT,
    "nodes": INT,
    "gpus_per_node": INT,
    "hardware": STR,
    "dp": INT,
    "fsdp": INT,
    "tp": INT,
    "pp": INT,
    "data_parallel": INT,
    "remat": STR,
    "remat_scope": STR,
    "remat_margin": NUM,
    "seq_len": INT,
    "micro_batch_size": INT,
    "global_batch_size": INT,
    "grad_accum": INT,
    "dtypes": {"compute": STR, "master": STR, "grad_reduce": STR, "optim": STR},
    "optimizer": STR,
    "frozen": [STR],
    "stacks_override": [STR],
    "pipeline": STR,
}
MEMORY = {
    "hardware": STR,
    "capacity_bytes": INT,
    "peak_bytes": INT,
    "peak_rank": (STR, NULL),
    "peak_phase": (STR, NULL),
    "allocator": STR,
    "device_peak_bytes": INT,
    "fits": BOOL,
    "headroom_bytes": INT,
    "breakdown": BREAKDOWN,
    "ranks": [
        {
            "kind": STR,
            "count": INT,
            "peak_bytes": INT,
            "peak_phase": STR,
            "reserved_bytes": INT,
            "reserved_phase": STR,
            "device_peak_bytes": INT,
            "layers": INT,
            "breakdown": BREAKDOWN,
        }
    ],
}
COST = {
    key: NUM
    for key in [
        "step_time_s",
        "tokens_per_s_per_gpu",
        "mfu",
        "flops_per_step",
        "model_flops_per_token",
        "tokens_per_step",
        "compute_s",
        "communication_s",
        "exposed_communication_s",
        "optimizer_s",
        "all_gather_bytes",
        "reduce_scatter_bytes",
        "optimizer_bytes",
    ]
}
COST["flops"] = {"forward": NUM, "backward": NUM, "recompute": NUM}
COST["dp"] = {"replicas": INT, "bytes": NUM, "seconds": NUM, "link": STR}
COST["tp"] = {"size": INT, "bytes": NUM, "seconds": NUM, "link": STR}
COST["pp"] = {
    "stages": INT,
    "schedule": STR,
    "chunks": INT,
    "microbatches": INT,
    "slowest_stage": INT,
    "seconds": NUM,
    "bubble": NUM,
    "closed_form_bubble": NUM,
    "p2p_bytes_per_microbatch": NUM,
    "tied_bytes": NUM,
    "tied_seconds": NUM,
}
COST["assumptions"] = {
    "peak_flops": NUM,
    "compute_efficiency": NUM,
    "overlap": STR,
    "link": STR,
    "link_bandwidth_bytes_per_s": NUM,
    "memory_bandwidth_bytes_per_s": NUM,
    "collective": STR,
    "attention": STR,
    "backward": STR,
}
DOCUMENT = {
    "version": INT,
    "status": STR,
    "recipe": (STR, NULL),
    "model": (MODEL, NULL),
    "plan": (PLAN, NULL),
    "memory": (MEMORY, NULL),
    "diagnostics": [{
        "severity": STR,
        "message": STR,
        "location": (STR, NULL),
        "path": (STR, NULL),
    }],
    "cost": (COST, NULL),
    "advice": [{
        "change": STR,
        "combined": BOOL,
        "settings": {},
        "planned": BOOL,
        "fits": BOOL,
        "refusal": (STR, NULL),
        "peak_bytes": (INT, NULL),
        "step_time_s": (NUM, NULL),
        "step_change": (NUM, NULL),
    }],
}


def check_cost(cost, world):
    """The cost fields agree with each other (docs/cost-model.md)."""

    def close(path, got, want):
        if abs(got - want) > 1e-9 * max(1.0, abs(want)):
            fail("$.cost." + path, "is %r, expected %r" % (got, want))

    a = cost["assumptions"]
    f = cost["flops"]
    close("flops_per_step", cost["flops_per_step"],
          f["forward"] + f["backward"] + f["recompute"])
    # Under a pipeline the FLOPs are the slowest stage's, not the average.
    if cost["pp"]["stages"] == 1:
        close("model_flops_per_token",
              cost["model_flops_per_token"] * cost["tokens_per_step"],
              f["forward"] + f["backward"])
    # TP collectives block the compute stream.
    close("compute_s", cost["compute_s"],
          cost["flops_per_step"] / (a["peak_flops"] * a["compute_efficiency"])
          + cost["tp"]["seconds"])
    ring = (world - 1) / world if world > 1 else 0.0
    close("communication_s", cost["communication_s"],
          ring * (cost["all_gather_bytes"] + cost["reduce_scatter_bytes"])
          / a["link_bandwidth_bytes_per_s"])
    if not 0 <= cost["exposed_communication_s"] <= cost["communication_s"] * (1 + 1e-9):
        fail("$.cost.exposed_communication_s", "is not within [0, communication_s]")
    close("optimizer_s", cost["optimizer_s"],
          cost["optimizer_bytes"] / a["memory_bandwidth_bytes_per_s"])
    # The micro-batches, the replicas' all-reduce, the optimizer step.
    # Without a pipeline that is the one program's timeline; with one the
    # stages end at different times: after the pipeline's last backward and
    # no later than it plus the last reductions (at most the exposed
    # communication), the step's own collectives and the largest optimizer
    # step.
    pipelined = cost["pp"]["stages"] > 1
    tail = (cost["pp"]["tied_seconds"] + cost["dp"]["seconds"]
            + cost["optimizer_s"])
    if pipelined:
        most = cost["pp"]["seconds"] + cost["exposed_communication_s"] + tail
        if not (cost["pp"]["seconds"] < cost["step_time_s"]
                <= most * (1 + 1e-9)):
            fail("$.cost.step_time_s",
                 "is not within (pp.seconds, pp.seconds + exposed + tied "
                 "+ dp + optimizer]")
    else:
        close("step_time_s", cost["step_time_s"],
              cost["compute_s"] + cost["exposed_communication_s"] + tail)
    close("tokens_per_s_per_gpu", cost["tokens_per_s_per_gpu"],
          cost["tokens_per_step"] / cost["step_time_s"])
    close("mfu", cost["mfu"],
          cost["model_flops_per_token"] * cost["tokens_per_s_per_gpu"] / a["peak_flops"])

document = json.load(sys.stdin)
check(document, DOCUMENT, "$")
if document["version"] != 1:
    fail("$.version", "expected 1")
expected_status = sys.argv[1]
if document["status"] != expected_status:
    fail("$.status", "expected '%s', got '%s'" % (expected_status, document["status"]))
if expected_status != "error":
    for key in ["model", "plan", "memory"]:
        if document[key] is None:
            fail("$." + key, "is null in a plan that did not fail")
    memory = document["memory"]
    if memory["fits"] != (expected_status == "fits"):
        fail("$.memory.fits", "disagrees with the status")
    if memory["headroom_bytes"] != memory["capacity_bytes"] - memory["device_peak_bytes"]:
        fail("$.memory.headroom_bytes", "is not capacity - device peak")
    if memory["device_peak_bytes"] < memory["peak_bytes"]:
        fail("$.memory.device_peak_bytes", "is below what the tensors hold")
    for i, rank in enumerate(memory["ranks"]):
        if rank["device_peak_bytes"] != max(
                rank["peak_bytes"],
                rank["reserved_bytes"] + rank["breakdown"]["fixed_overhead"]):
            fail("$.memory.ranks[%d].device_peak_bytes" % i,
                 "is not the reserved bytes and the fixed overhead")
    if sum(memory["breakdown"].values()) != memory["peak_bytes"]:
        fail("$.memory.breakdown", "does not add up to peak_bytes")
    if document["cost"] is None:
        fail("$.cost", "is null in a plan that did not fail")
    check_cost(document["cost"], document["plan"]["fsdp"])
    if (expected_status == "fits") != (not document["advice"]):
        fail("$.advice", "is given exactly when the plan does not fit")
    for i, advice in enumerate(document["advice"]):
        if advice["planned"] != (advice["refusal"] is None):
            fail("$.advice[%d].refusal" % i, "is given exactly when it was not planned")
        if advice["fits"] and not advice["planned"]:
            fail("$.advice[%d].fits" % i, "an unplanned change cannot fit")
elif not any(d["severity"] == "error" for d in document["diagnostics"]):
    fail("$.diagnostics", "an error document holds no error")
print("plan document ok: %s" % document["status"])
