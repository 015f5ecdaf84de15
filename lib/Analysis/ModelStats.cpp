//===- ModelStats.cpp - parameter counts of a parc.model ------------------===//

#include "parc/Analysis/ModelStats.h"
#include "parc/Analysis/ModelGraph.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <functional>

using namespace mlir;
using namespace mlir::parc;

std::string mlir::parc::getDtypeName(Type elementType) {
  std::string name;
  llvm::raw_string_ostream os(name);
  elementType.print(os);
  return name;
}

ModelStats ModelStats::compute(ModelOp model) {
  ModelStats stats;
  // Aliases are every tie entry but the first, which owns the storage.
  llvm::DenseSet<Operation *> aliases;
  for (TieOp tie : model.getBody()->getOps<TieOp>()) {
    std::vector<std::string> group;
    std::string owner;
    for (auto ref : tie.getParams().getAsRange<SymbolRefAttr>()) {
      Operation *param = SymbolTable::lookupSymbolIn(model, ref);
      if (!param)
        continue;
      std::string path = getDottedPath(param);
      if (group.empty())
        owner = path;
      else {
        aliases.insert(param);
        stats.aliasOwner[path] = owner;
      }
      group.push_back(path);
    }
    stats.tieGroups.push_back(std::move(group));
  }

  walkModelGraph(model, [&](Operation *op) {
    auto param = dyn_cast<ParamOp>(op);
    if (!param || aliases.contains(param))
      return;
    int64_t count = param.getNumElements();
    stats.totalParameters += count;
    stats.parametersByDtype[getDtypeName(
        param.getTensorType().getElementType())] += count;
    for (Operation *parent = param->getParentOp(); parent && parent != model;
         parent = parent->getParentOp())
      stats.subtreeParameters[parent] += count;
  });
  return stats;
}

static void printRow(llvm::raw_ostream &os, unsigned indent,
                     llvm::StringRef label, int64_t count,
                     llvm::StringRef suffix = {}) {
  os.indent(indent) << llvm::left_justify(label, 56 - indent) << " "
                    << llvm::format_decimal(count, 15);
  if (!suffix.empty())
    os << "  " << suffix;
  os << "\n";
}

void ModelStats::print(ModelOp model, llvm::raw_ostream &os,
                       unsigned maxDepth) const {
  os << totalParameters << "\n";
  if (maxDepth > 0) {
    os << "subtrees:\n";
    std::function<void(Block *, unsigned)> visit = [&](Block *body,
                                                       unsigned depth) {
      for (NNModuleOp module : body->getOps<NNModuleOp>()) {
        std::string path = getDottedPath(module);
        std::string note;
        module.walk([&](ParamOp param) {
          auto it = aliasOwner.find(getDottedPath(param));
          if (it != aliasOwner.end())
            note = "(tied to " + it->second + ")";
        });
        printRow(os, 2 * depth, path, subtreeParameters.lookup(module), note);
        if (depth < maxDepth)
          visit(module.getBody(), depth + 1);
      }
    };
    visit(model.getBody(), 1);
  }
  os << "dtypes:\n";
  for (const auto &[dtype, count] : parametersByDtype)
    printRow(os, 2, dtype, count);
  os << "ties:\n";
  if (tieGroups.empty())
    os << "  (none)\n";
  for (const std::vector<std::string> &group : tieGroups)
    os << "  " << llvm::join(group, " = ") << "\n";
}
