//===- ParcScheduleOps.td - per-rank-kind programs ---------*- tablegen -*-===//
//
// --lower-to-schedule writes one parc.program per kind of rank: the straight
// line of steps one training step runs there. Communication is upstream
// shard collectives on the model's grids, over flat buffers that parc.buffer
// names; everything shard has no word for (compute steps, saved activations,
// frees, the optimizer) is a parc op here. docs/schedule.md lists the
// vocabulary and how each step is derived.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCSCHEDULEOPS_TD
#define PARC_DIALECT_PARC_IR_PARCSCHEDULEOPS_TD

/// What a flat buffer handed to a collective holds.
def Parc_BufferKind : I32EnumAttr<"BufferKind", "contents of a flat buffer", [
  I32EnumAttrCase<"ParamShard", 0, "param_shard">,
  I32EnumAttrCase<"Gradient", 1, "gradient">,
  I32EnumAttrCase<"Activation", 2, "activation">,
  I32EnumAttrCase<"ActivationGrad", 3, "activation_grad">
]> {
  let cppNamespace = "::mlir::parc";
}

/// What a `parc.alloc` holds.
def Parc_AllocKind : I32EnumAttr<"AllocKind", "memory a compute step leaves", [
  I32EnumAttrCase<"Gradients", 0, "gradients">,
  I32EnumAttrCase<"GradientShards", 1, "gradient_shards">,
  I32EnumAttrCase<"Logits", 2, "logits">
]> {
  let cppNamespace = "::mlir::parc";
}

def Parc_StepPeakAttr : AttrDef<Parc_Dialect, "StepPeak"> {
  let mnemonic = "peak";
  let summary = "The bytes a step holds at its highest, above what was live";
  let description = [{
    What one step adds, at its highest point, to the bytes live before it,
    by what holds them: `working` (an op's operands and result, a recompute,
    the in-place accumulation of a new gradient), `logits` (the loss path),
    `saved` (what a loss keeps for its backward) and `gradients` (gradients
    the step produces, reduced shards beside their input). A part may be
    negative, bytes the step frees before its highest point (what the loss
    kept, at lm_head's backward); the whole may not. What the step
    leaves behind follows it as `parc.save` / `parc.alloc` ops, so a replay
    of a program is: live bytes are the allocations not yet freed, and each
    step with a peak reaches live + peak. A step without one adds nothing.

    `blocks`, where present, are the tensors that make up the positive
    parts, in the order the step allocates them (the loss path's logits,
    their fp32 copy, the log-softmax); without it each positive part is
    one tensor. A replay that counts bytes needs only the parts; one that
    models a caching allocator places each block, since which freed block a
    later tensor fits in depends on the sizes, not on their sum.

    ```mlir
    parc.backward_step "model.layers.1" micro_batch 0 peak <working = 9184>
    parc.backward_step "" part "tail" micro_batch 0
        peak <logits = 8192, blocks = [4096, 4096]>
    ```
  }];
  let parameters = (ins DefaultValuedParameter<"int64_t", "0">:$working,
                        DefaultValuedParameter<"int64_t", "0">:$logits,
                        DefaultValuedParameter<"int64_t", "0">:$saved,
                        DefaultValuedParameter<"int64_t", "0">:$gradients,
                        OptionalParameter<"::mlir::DenseI64ArrayAttr">:$blocks);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t total() const {
      return getWorking() + getLogits() + getSaved() + getGradients();
    }
    /// The tensors the step allocates on the way to its highest point:
    /// `blocks`, or each positive part as one.
    ::llvm::SmallVector<int64_t> getTensors() const;
  }];
}

def Parc_ProgramOp : Parc_Op<"program", [
    Symbol, HasParent<"ModelOp">, SingleBlock, NoTerminator,
    NoRegionArguments]> {
  let summary = "The straight-line step of one kind of rank";
  let description = [{
    The ordered steps of one training step (every micro-batch, then the
    optimizer) that all ranks of one kind run. `covers` says which grid
    coordinates run it: each entry maps a `shard.grid` of the model to the
    indices along its axis (a grid not listed: every index); `ranks` is how
    many ranks that is. `micro_batches` bounds every step's `micro_batch`;
    `batch` sequences of `seq` tokens make one micro-batch, so one step of
    this program trains on `micro_batches x batch` sequences per data shard.
    The runtime takes its batch from here: a different batch is a
    different program.

    The region verifier checks the program as a whole: every `parc.save`
    is freed exactly once and nothing is freed twice, every FSDP
    all-gather is waited for once before its unit computes or is freed,
    every FSDP reduce-scatter once before the next is issued, before what
    reads it and before the optimizer, a layer's backward
    follows its forward (and a recompute lies between them), every step
    names a discovered layer of the model or the root's `head` / `tail`.

    ```mlir
    parc.program @stage_0 ranks 2 covers {pp = array<i64: 0>} micro_batches 4
        batch 1 seq 4096 {
      %w = parc.buffer param_shard "model.layers.0" : tensor<324xbf16>
      %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0
          : tensor<324xbf16> -> tensor<648xbf16>
      parc.wait %g : tensor<648xbf16>
      parc.forward_step "model.layers.0" micro_batch 0
      %a = parc.save "model.layers.0" micro_batch 0 : tensor<8192xi8>
      parc.free %g : tensor<648xbf16>
      ...
      parc.optimizer_step params 1024
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$ranks,
                       DictionaryAttr:$covers, I64Attr:$micro_batches,
                       I64Attr:$batch, I64Attr:$seq);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = [{
    $sym_name `ranks` $ranks `covers` $covers `micro_batches` $micro_batches
    `batch` $batch `seq` $seq attr-dict-with-keyword $bodyRegion
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

class Parc_StepOp<string mnemonic, list<Trait> traits = []>
    : Parc_Op<mnemonic, !listconcat(traits, [HasParent<"ProgramOp">])>;

def Parc_BufferOp : Parc_StepOp<"buffer"> {
  let summary = "A flat buffer a collective reads";
  let description = [{
    Names the bytes a following collective communicates: an FSDP unit's
    shard in the compute dtype (`param_shard`), its unsharded gradient in
    the reduce dtype (`gradient`), an activation or an activation gradient
    of a layer's micro-batch (`activation`, `activation_grad`: pipeline
    sends and receives, TP collectives). `of` is the unit's, layer's or
    parameter's dotted path ("" for the root). The type is 1-D and static:
    its size times its element size is the byte count.
  }];
  let arguments = (ins Parc_BufferKind:$kind, StrAttr:$of,
                       OptionalAttr<I64Attr>:$micro_batch);
  let results = (outs 1DTensorOf<[AnyType]>:$result);
  let assemblyFormat = [{
    $kind $of (`micro_batch` $micro_batch^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

class Parc_ComputeStepOp<string mnemonic, string what>
    : Parc_StepOp<mnemonic> {
  let summary = what # " of a layer, or of the root's head or tail ops";
  let description = [{
    Runs the }] # what # [{ of the layer at dotted path `module` for one
    micro-batch (on local model chunk `chunk` under interleaved 1F1B), or,
    with `module = ""` and `part`, of the root's own ops: `head` (before the
    first layer: embeddings) or `tail` (after the last: final norm, lm_head,
    loss). TP collectives the step issues follow it in the program.
  }];
  let arguments = (ins StrAttr:$module, OptionalAttr<StrAttr>:$part,
                       I64Attr:$micro_batch,
                       DefaultValuedAttr<I64Attr, "0">:$chunk,
                       OptionalAttr<Parc_StepPeakAttr>:$peak);
  let assemblyFormat = [{
    $module (`part` $part^)? `micro_batch` $micro_batch (`chunk` $chunk^)?
    (`peak` $peak^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Parc_ForwardStepOp : Parc_ComputeStepOp<"forward_step", "The forward">;
def Parc_BackwardStepOp : Parc_ComputeStepOp<"backward_step", "The backward">;

def Parc_RecomputeStepOp : Parc_StepOp<"recompute_step"> {
  let summary = "Rebuild a layer's activations before its backward";
  let description = [{
    Reruns the forward of a layer under its remat decision (`full`: the
    whole layer from its saved input; `selective`: the ops marked
    `parc.recompute`), producing `bytes` of activations its backward then
    consumes.
  }];
  let arguments = (ins StrAttr:$module, I64Attr:$micro_batch,
                       DefaultValuedAttr<I64Attr, "0">:$chunk,
                       Parc_RematKindAttr:$remat,
                       I64Attr:$bytes);
  let assemblyFormat = [{
    $module `micro_batch` $micro_batch (`chunk` $chunk^)? `remat` $remat
    `bytes` $bytes attr-dict
  }];
  let hasVerifier = 1;
}

def Parc_SaveOp : Parc_StepOp<"save"> {
  let summary = "The activations a forward keeps for its backward";
  let description = [{
    What the preceding forward of `module` for `micro_batch` keeps alive
    until its backward (under its remat decision), as a flat byte buffer:
    the result's size is the byte count. It is released by `parc.free`.
  }];
  let arguments = (ins StrAttr:$module, OptionalAttr<StrAttr>:$part,
                       I64Attr:$micro_batch,
                       DefaultValuedAttr<I64Attr, "0">:$chunk);
  let results = (outs 1DTensorOf<[I8]>:$result);
  let assemblyFormat = [{
    $module (`part` $part^)? `micro_batch` $micro_batch (`chunk` $chunk^)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Parc_AllocOp : Parc_StepOp<"alloc"> {
  let summary = "Memory the preceding compute step leaves behind";
  let description = [{
    What a compute step of `of` ("" for the root) produced that outlives it,
    as a flat byte buffer (the result's size is the byte count), until its
    `parc.free`: a unit's unsharded `gradients` (in the compute dtype, and a
    reduce-dtype copy where the two differ) until the wait of the
    reduce-scatter that reads them, or until the next compute step adds
    them into the parameters' own gradients without FSDP; a unit's
    `gradient_shards` (this rank's fp32 gradients, from the unit's first
    backward to the end of the step); what the loss keeps of the `logits`
    for its backward.

    ```mlir
    parc.backward_step "model.layers.1" micro_batch 0 peak <working = 9184>
    %g = parc.alloc gradients "model.layers.1" micro_batch 0 : tensor<4928xi8>
    ```
  }];
  let arguments = (ins Parc_AllocKind:$kind, StrAttr:$of,
                       OptionalAttr<I64Attr>:$micro_batch);
  let results = (outs 1DTensorOf<[I8]>:$result);
  let assemblyFormat = [{
    $kind $of (`micro_batch` $micro_batch^)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Parc_FreeOp : Parc_StepOp<"free"> {
  let summary = "Release a gathered unit, saved activations or an allocation";
  let description = [{
    Frees the result of a `shard.all_gather` (an unsharded FSDP unit), of a
    `parc.save` (a layer's saved activations) or of a `parc.alloc` of the
    same program.
  }];
  let arguments = (ins AnyRankedTensor:$buffer);
  let assemblyFormat = "$buffer attr-dict `:` type($buffer)";
}

def Parc_WaitOp : Parc_StepOp<"wait"> {
  let summary = "Wait for an FSDP all-gather or reduce-scatter to land";
  let description = [{
    FSDP's collectives run on the communication stream from where the
    program issues them while the compute steps between go on; `parc.wait`
    is where the compute stream stops until one has landed. Each is waited
    exactly once, after its issue:

    - a `shard.all_gather` of a `param_shard` buffer (issued the unit's
      `prefetch` compute steps ahead), before the next compute step of its
      unit (of any step, for the root's unit) and before its `parc.free`;
      its bytes are allocated from the issue;
    - a `shard.reduce_scatter` of a `gradient` buffer (issued after the
      unit's backward), before the next FSDP reduce-scatter is issued, and
      before any step that reads its result (a replica all-reduce), the
      gradient clipping and the optimizer step. At most one reduce-scatter
      is in flight, as in FSDP2: the unsharded gradient it reads lives from
      the backward that produced it until this wait, so the backward of the
      next unit overlaps it.

    What overlaps is therefore the program's: the runtime issues the
    collective at its step and blocks at the wait (on CPU ranks, Gloo's
    reduce-scatter completes at its issue and keeps its input to the wait),
    and the cost model's
    compute stream stalls here for whatever of the collective the steps
    since its issue did not hide.

    ```mlir
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0
        : tensor<324xbf16> -> tensor<648xbf16>
    parc.forward_step "model.layers.0" micro_batch 0
    parc.wait %g : tensor<648xbf16>
    parc.forward_step "model.layers.1" micro_batch 0
    ```
  }];
  let arguments = (ins AnyRankedTensor:$collective,
                       OptionalAttr<Parc_StepPeakAttr>:$peak);
  let assemblyFormat = [{
    $collective (`peak` $peak^)? attr-dict `:` type($collective)
  }];
}

def Parc_ClipGradNormOp : Parc_StepOp<"clip_grad_norm"> {
  let summary = "Scale the step's gradients to a global norm";
  let description = [{
    After every gradient of the step has been reduced, computes the global
    L2 norm of all gradients (each rank's shards, summed over every rank of
    the model: FSDP shards, TP ranks, pipeline stages, replicas; copies
    counted once) and, when it exceeds `max_norm`, scales them by
    `max_norm / norm` in place (torch.nn.utils.clip_grad_norm_). It
    immediately precedes the `parc.optimizer_step`; a program without one
    does not clip.
  }];
  let arguments = (ins F64Attr:$max_norm);
  let assemblyFormat = "`max_norm` $max_norm attr-dict";
  let hasVerifier = 1;
}

def Parc_OptimizerStepOp : Parc_StepOp<"optimizer_step"> {
  let summary = "AdamW over this rank's trainable shards";
  let description = [{
    Updates the `params` elements of trainable parameter shards this rank
    holds (master weights and both moments), after every gradient of the
    step has been reduced.
  }];
  let arguments = (ins I64Attr:$params);
  let assemblyFormat = "`params` $params attr-dict";
  let hasVerifier = 1;
}

#endif // PARC_DIALECT_PARC_IR_PARCSCHEDULEOPS_TD
