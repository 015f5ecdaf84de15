//===- PlanFile.cpp - reading and describing plan.bin ---------------------===//

#include "parc/runtime/PlanFile.h"

#include <fstream>
#include <iterator>
#include <sstream>

using namespace parc;
using namespace parc::runtime;

std::unique_ptr<PlanFile> PlanFile::load(const std::string &path,
                                         std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open plan";
    return nullptr;
  }
  auto file = std::unique_ptr<PlanFile>(new PlanFile());
  file->filePath = path;
  file->bytes.assign(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
  std::string why;
  file->root = plan::verifyPlan(file->bytes.data(), file->bytes.size(), why);
  if (!file->root) {
    error = path + ": " + why;
    return nullptr;
  }
  return file;
}

uint64_t parc::runtime::fnv1a(const void *data, size_t size, uint64_t seed) {
  uint64_t hash = 1469598103934665603ull ^ seed;
  const auto *bytes = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

namespace {

const char *str(const flatbuffers::String *s) { return s ? s->c_str() : ""; }

const char *dtypeName(plan::DType dtype) {
  switch (dtype) {
  case plan::DType::BF16:
    return "bf16";
  case plan::DType::F16:
    return "f16";
  default:
    return "f32";
  }
}

void printAttr(const plan::OpAttr &attr, std::ostream &os) {
  if (attr.name())
    os << attr.name()->str() << "=";
  switch (attr.kind()) {
  case plan::AttrKind::Unit:
    os << "true";
    break;
  case plan::AttrKind::Bool:
    os << (attr.int_value() ? "true" : "false");
    break;
  case plan::AttrKind::Int:
    if (attr.string_value())
      os << attr.string_value()->str();
    else
      os << attr.int_value();
    break;
  case plan::AttrKind::Float:
    os << attr.float_value();
    break;
  case plan::AttrKind::String:
    os << '"' << str(attr.string_value()) << '"';
    break;
  case plan::AttrKind::Ref:
    os << '@' << str(attr.string_value());
    break;
  case plan::AttrKind::Dict:
  case plan::AttrKind::Array: {
    bool dict = attr.kind() == plan::AttrKind::Dict;
    os << (dict ? '{' : '[');
    if (attr.children())
      for (unsigned i = 0; i < attr.children()->size(); ++i) {
        if (i)
          os << ", ";
        printAttr(*attr.children()->Get(i), os);
      }
    os << (dict ? '}' : ']');
    break;
  }
  case plan::AttrKind::Opaque:
    os << str(attr.string_value());
    break;
  }
}

} // namespace

void parc::runtime::describePlan(const plan::Plan &plan, std::ostream &os) {
  os << "plan " << str(plan.model_name()) << " (" << str(plan.model_class())
     << "), format " << plan.format_version() << "\n";
  size_t numParams = plan.params() ? plan.params()->size() : 0;
  os << "params " << numParams << "\n";
  if (plan.params())
    for (const plan::Param *param : *plan.params()) {
      os << "  param " << str(param->path()) << " [";
      if (param->shape())
        for (unsigned i = 0; i < param->shape()->size(); ++i)
          os << (i ? "x" : "") << param->shape()->Get(i);
      os << "] " << dtypeName(param->dtype()) << " init "
         << str(param->init()) << (param->frozen() ? " frozen" : "") << "\n";
    }
  if (plan.ties())
    for (const plan::Tie *tie : *plan.ties()) {
      os << "  tie";
      if (tie->params())
        for (const flatbuffers::String *path : *tie->params())
          os << " " << path->str();
      os << "\n";
    }
  if (plan.grids())
    for (const plan::Grid *grid : *plan.grids()) {
      os << "grid " << str(grid->name()) << " [";
      if (grid->shape())
        for (unsigned i = 0; i < grid->shape()->size(); ++i)
          os << (i ? "x" : "") << grid->shape()->Get(i);
      os << "]\n";
    }
  if (plan.fsdp_units())
    for (const plan::FsdpUnit *unit : *plan.fsdp_units())
      os << "fsdp_unit " << str(unit->name()) << " path \"" << str(unit->path())
         << "\" params " << (unit->params() ? unit->params()->size() : 0)
         << " compute " << dtypeName(unit->compute_dtype()) << " reshard "
         << (unit->reshard_after_forward() ? "true" : "false") << "\n";
  if (plan.modules())
    for (const plan::Module *module : *plan.modules())
      if (module->remat())
        os << "remat " << str(module->path()) << " " << str(module->remat())
           << "\n";
  if (const plan::Prediction *p = plan.prediction())
    os << "prediction " << str(p->hardware()) << " seq " << p->seq_len()
       << " mbs " << p->micro_batch_size() << " peak " << p->peak_bytes()
       << " (" << str(p->peak_phase()) << ")\n";
  size_t numForwards = plan.forwards() ? plan.forwards()->size() : 0;
  os << "forwards " << numForwards << "\n";
  if (!plan.forwards())
    return;
  for (const plan::Forward *fwd : *plan.forwards()) {
    os << "forward \"" << str(fwd->path()) << "\" args "
       << (fwd->arg_types() ? fwd->arg_types()->size() : 0) << "\n";
    if (fwd->ops())
      for (const plan::ForwardOp *op : *fwd->ops()) {
        os << "  ";
        if (op->results())
          for (unsigned i = 0; i < op->results()->size(); ++i)
            os << (i ? ", " : "") << "%" << op->results()->Get(i);
        os << " = " << str(op->name()) << "(";
        if (op->operands())
          for (unsigned i = 0; i < op->operands()->size(); ++i)
            os << (i ? ", " : "") << "%" << op->operands()->Get(i);
        os << ")";
        if (op->attrs())
          for (const plan::OpAttr *attr : *op->attrs()) {
            os << " ";
            printAttr(*attr, os);
          }
        os << "\n";
      }
    os << "  return";
    if (fwd->results())
      for (int id : *fwd->results())
        os << " %" << id;
    os << "\n";
  }
}
