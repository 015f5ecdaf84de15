//===- ParcInterfaces.td - what each forward op means ------*- tablegen -*-===//
//
// Per-op knowledge lives on the op: what it costs (FLOPs at given shapes),
// what its autograd backward saves, whether remat recomputes it, and how it
// runs under tensor parallelism. The
// cost model and the activation trace walk a forward and ask each op through
// these interfaces; adding an op means implementing them, not editing the
// analyses.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCINTERFACES_TD
#define PARC_DIALECT_PARC_IR_PARCINTERFACES_TD

include "mlir/IR/OpBase.td"

def Parc_FlopsOpInterface : OpInterface<"FlopsOpInterface"> {
  let description = [{
    The floating-point work of one op at the shapes it runs at: forward
    FLOPs, the backward FLOPs of the gradients that are needed (a frozen
    weight has no weight gradient; an input nothing trainable precedes has no
    input gradient) and which part of the forward is a matrix product or
    attention (the kernels the hardware profile rates separately). An op
    without this interface costs nothing. docs/cost-model.md states the
    conventions.
  }];
  let cppNamespace = "::mlir::parc";
  let methods = [
    InterfaceMethod<[{
        FLOPs per result element of an elementwise op; the default
        `getFlops` charges this for every result element forward and twice
        that backward when a gradient flows.
      }],
      "double", "getFlopsPerElement", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        The op's FLOPs for the shapes and gradients in `query`.
      }],
      "::mlir::parc::OpFlops", "getFlops",
      (ins "const ::mlir::parc::FlopQuery &":$query), [{}], [{
        return ::mlir::parc::getElementwiseFlops(
            query, $_op.getFlopsPerElement(), query.getResultElements());
      }]>
  ];
}

def Parc_AutogradOpInterface : OpInterface<"AutogradOpInterface"> {
  let description = [{
    What the op's autograd backward keeps from its forward: operands,
    results, buffers its kernel allocates (eager attention's probabilities,
    an eager norm's fp32 products) and fp32 statistics (a norm's rstd, flash
    attention's logsumexp), as the kernels of the hardware profile save
    them; and whether selective remat recomputes the op rather than keep
    what it saves (cheap elementwise work next to the matmuls). An op
    without this interface saves nothing and is never recomputed.
  }];
  let cppNamespace = "::mlir::parc";
  let methods = [
    InterfaceMethod<[{
        Records into `saves` what this op's backward needs.
      }],
      "void", "recordSaves", (ins "::mlir::parc::SaveRecorder &":$saves),
      [{}], [{ return; }]>,
    InterfaceMethod<[{
        Whether selective remat recomputes this op in backward.
      }],
      "bool", "isCheapToRecompute", (ins), [{}], [{ return false; }]>,
    InterfaceMethod<[{
        What torchtitan's op-level checkpointing policy sees this op as:
        an `aten.mm` (every second one is kept), a fused attention kernel
        (always kept), or anything else (recomputed).
      }],
      "::mlir::parc::SaveListClass", "getSaveListClass", (ins), [{}],
      [{ return ::mlir::parc::SaveListClass::Other; }]>
  ];
}

def Parc_TpShardingOpInterface : OpInterface<"TpShardingOpInterface"> {
  let description = [{
    How the op runs when tensor parallelism splits its operands or its
    weight, in the manner of Shardy's sharding rules: given what a TP rank
    holds of each operand (`full`, `features`, `vocab`, `sequence`) and the
    TP roles apply-tp gave its weight and bias, what it holds of the result
    and which collectives make that so, or why the split cannot run.
    apply-tp asks every op once and records the answer (`#parc.tp_shards`);
    the memory model, the lowering and parc-run read that record. An op
    without this interface refuses any TP plan that reaches it.
  }];
  let cppNamespace = "::mlir::parc";
  let methods = [
    InterfaceMethod<[{
        Whether operand `operand` may stay split over the vocabulary (the
        logit softcap; a cross-entropy under loss parallel). Otherwise
        apply-tp all-gathers vocab shards before the op.
      }],
      "bool", "keepsVocabShards",
      (ins "unsigned":$operand, "bool":$lossParallel), [{}],
      [{ return false; }]>,
    InterfaceMethod<[{
        Decides `query`'s result shard and collectives from its operands'
        shards, or refuses with `query.refuse(...)`. The default is an
        elementwise op's: the result is split as its operands are, which
        must agree.
      }],
      "::mlir::LogicalResult", "inferTpShards",
      (ins "::mlir::parc::TpShardQuery &":$query), [{}],
      [{ return query.inferElementwise(); }]>
  ];
}

#endif // PARC_DIALECT_PARC_IR_PARCINTERFACES_TD
