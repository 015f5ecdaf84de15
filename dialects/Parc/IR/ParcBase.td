//===- ParcBase.td - parc dialect definition ---------------*- tablegen -*-===//
//
// The parc dialect describes a model as PyTorch sees it: the module tree of
// named_modules(), its parameters and their storage ties, and each module's
// forward at the granularity at which autograd saves tensors.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_DIALECT_PARC_IR_PARCBASE_TD
#define PARC_DIALECT_PARC_IR_PARCBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Parc_Dialect : Dialect {
  let name = "parc";
  let cppNamespace = "::mlir::parc";
  let summary = "Model structure, parameters and forward graphs for planning";
  let description = [{
    The parc dialect is the input language of the parc planner. A `parc.model`
    holds the module tree of a PyTorch model with the exact dotted paths that
    `named_modules()` yields (`model.layers.17.self_attn.q_proj`), the
    parameters with shapes and dtypes, the tie groups of parameters that share
    storage, and every module's forward as a `func.func @forward` whose ops are
    at the granularity at which autograd saves tensors. Later passes annotate
    this IR with layer stacks, remat regions and FSDP units; device grids and
    collectives come from the upstream `shard` dialect.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Parc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Parc_Dialect, mnemonic, traits>;

/// How a module relates to its children, mirroring torch.nn's containers.
def Parc_ModuleKind : I32EnumAttr<"ModuleKind", "kind of a torch.nn module", [
  I32EnumAttrCase<"Leaf", 0, "leaf">,
  I32EnumAttrCase<"Composite", 1, "composite">,
  I32EnumAttrCase<"List", 2, "list">,
  I32EnumAttrCase<"Dict", 3, "dict">,
  I32EnumAttrCase<"Sequential", 4, "sequential">
]> {
  let cppNamespace = "::mlir::parc";
}

def Parc_ActivationKind : I32EnumAttr<"ActivationKind",
    "pointwise activation function", [
  I32EnumAttrCase<"Silu", 0, "silu">,
  I32EnumAttrCase<"GeluTanh", 1, "gelu_tanh">,
  I32EnumAttrCase<"Gelu", 2, "gelu">,
  I32EnumAttrCase<"Relu", 3, "relu">
]> {
  let cppNamespace = "::mlir::parc";
}

#endif // PARC_DIALECT_PARC_IR_PARCBASE_TD
