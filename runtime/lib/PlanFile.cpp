//===- PlanFile.cpp - reading and describing plan.bin ---------------------===//

#include "parc/runtime/PlanFile.h"

#include <algorithm>
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

std::string parc::runtime::printable(const std::string &text,
                                     bool keepLineBreaks) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if ((c >= 0x20 && c != 0x7f) ||
        (keepLineBreaks && (c == '\n' || c == '\t'))) {
      out += char(c);
      continue;
    }
    static constexpr char kDigits[] = "0123456789abcdef";
    out += "\\x";
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

void RankLayout::place(int rank) {
  tpIndex = rank % tp;
  fsdpIndex = rank / tp % fsdp;
  dpIndex = rank / (tp * fsdp) % dp;
  ppIndex = rank / (tp * fsdp * dp);
}

/// The most ranks a plan may lay out: parc-plan's own bound on GPUs
/// (RecipeLimits::kMaxGpus), so that no product of axis sizes read from a
/// file can overflow.
static constexpr int64_t kMaxWorld = int64_t(1) << 17;

bool parc::runtime::growWorld(int64_t &world, int64_t size,
                              const std::string &what, std::string &error) {
  if (size < 1 || size > kMaxWorld || world > kMaxWorld / size) {
    error = what + " of size " + std::to_string(size) +
            " gives a world of more than " + std::to_string(kMaxWorld) +
            " ranks (or less than 1)";
    return false;
  }
  world *= size;
  return true;
}

bool parc::runtime::readRankLayout(const plan::Plan &plan, RankLayout &layout,
                                   std::string &error) {
  layout = RankLayout();
  const plan::Parallelism *par = plan.parallelism();
  if (!par || !par->axes() || par->axes()->size() == 0) {
    // Older plans: the fsdp grid alone.
    if (plan.grids())
      for (const plan::Grid *grid : *plan.grids()) {
        int64_t size = 1;
        if (grid->shape())
          for (int64_t d : *grid->shape())
            if (!growWorld(size, d, "grid '" + grid->name()->str() + "' axis",
                           error))
              return false;
        if (grid->name()->str() == "fsdp")
          layout.fsdp = size;
        else if (size > 1) {
          error = "grid '" + grid->name()->str() + "' of size " +
                  std::to_string(size) +
                  " without the plan's rank layout (Parallelism); re-export "
                  "the plan";
          return false;
        }
      }
    layout.world = layout.fsdp;
    return true;
  }
  if (!par->sizes() || par->sizes()->size() != par->axes()->size()) {
    error = "the plan's Parallelism lists " +
            std::to_string(par->axes()->size()) + " axes and " +
            std::to_string(par->sizes() ? par->sizes()->size() : 0) + " sizes";
    return false;
  }
  int64_t world = 1;
  for (unsigned i = 0; i < par->axes()->size(); ++i) {
    std::string axis = par->axes()->Get(i)->str();
    int64_t size = par->sizes()->Get(i);
    if (!growWorld(world, size, "axis '" + axis + "'", error))
      return false;
    if (axis == "pp")
      layout.pp = size;
    else if (axis == "dp")
      layout.dp = size;
    else if (axis == "fsdp")
      layout.fsdp = size;
    else if (axis == "tp")
      layout.tp = size;
    else {
      error = "unknown rank axis '" + axis + "' (pp, dp, fsdp, tp)";
      return false;
    }
  }
  if (par->world_size() && par->world_size() != world) {
    error = "the plan's world size " + std::to_string(par->world_size()) +
            " is not the product " + std::to_string(world) + " of its axes";
    return false;
  }
  layout.world = world;
  layout.sequenceParallel = par->sequence_parallel();
  layout.lossParallel = par->loss_parallel();
  layout.microbatches = std::max<int64_t>(1, par->microbatches());
  if (layout.pp > 1) {
    layout.schedule = par->pp_schedule() ? par->pp_schedule()->str() : "";
    layout.stageSteps.resize(layout.pp);
    if (par->pp_steps())
      for (const plan::PipelineStage *stage : *par->pp_steps()) {
        if (stage->stage() < 0 || stage->stage() >= layout.pp) {
          error = "pipeline schedule of stage " +
                  std::to_string(stage->stage()) + " outside the " +
                  std::to_string(layout.pp) + " stages";
          return false;
        }
        if (stage->steps())
          for (const flatbuffers::String *step : *stage->steps())
            layout.stageSteps[stage->stage()].push_back(step->str());
      }
    for (int s = 0; s < layout.pp; ++s)
      if (layout.stageSteps[s].empty()) {
        error = "the plan's pipeline schedule has no steps for stage " +
                std::to_string(s);
        return false;
      }
  }
  layout.chunks = std::max<int64_t>(1, par->pp_chunks());
  if (layout.pp > 1 && layout.schedule != "gpipe" &&
      layout.schedule != "1f1b" && layout.schedule != "interleaved-1f1b") {
    error = "pipeline schedule '" + layout.schedule +
            "' is not built in parc-run (gpipe, 1f1b, interleaved-1f1b)";
    return false;
  }
  if (layout.chunks > 1 && layout.pp == 1) {
    error =
        std::to_string(layout.chunks) + " pipeline chunks without a pipeline";
    return false;
  }
  return true;
}

namespace {

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
      os << "] " << dtypeName(param->dtype()) << " init " << str(param->init())
         << (param->frozen() ? " frozen" : "");
      if (param->tp() && param->tp()->size())
        os << " tp " << param->tp()->str();
      if (param->tp_padded_dim0())
        os << " tp_padded_dim0 " << param->tp_padded_dim0();
      if (param->pp_stage())
        os << " stage " << param->pp_stage();
      os << "\n";
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
  if (const plan::Parallelism *par = plan.parallelism()) {
    os << "parallelism world " << par->world_size();
    if (par->axes() && par->sizes())
      for (unsigned i = 0; i < par->axes()->size() && i < par->sizes()->size();
           ++i)
        os << " " << par->axes()->Get(i)->str() << " " << par->sizes()->Get(i);
    if (par->sequence_parallel())
      os << " sequence-parallel";
    if (par->loss_parallel())
      os << " loss-parallel";
    if (par->pp_schedule() && par->pp_schedule()->size())
      os << " schedule " << par->pp_schedule()->str() << " chunks "
         << par->pp_chunks() << " microbatches " << par->microbatches();
    os << "\n";
    if (par->pp_steps())
      for (const plan::PipelineStage *stage : *par->pp_steps()) {
        os << "  stage " << stage->stage();
        if (stage->steps())
          for (const flatbuffers::String *step : *stage->steps())
            os << " " << step->str();
        os << "\n";
      }
  }
  if (const plan::Prediction *p = plan.prediction())
    os << "prediction " << str(p->hardware()) << " seq " << p->seq_len()
       << " mbs " << p->micro_batch_size() << " peak " << p->peak_bytes()
       << " (" << str(p->peak_phase()) << ")\n";
  if (plan.programs())
    for (const plan::Program *program : *plan.programs()) {
      os << "program @" << str(program->name()) << ": " << program->ranks()
         << " rank" << (program->ranks() == 1 ? "" : "s") << ", "
         << program->micro_batches() << " micro-batch"
         << (program->micro_batches() == 1 ? "" : "es") << " of "
         << program->batch() << " x " << program->seq() << " tokens, "
         << (program->steps() ? program->steps()->size() : 0) << " steps";
      if (program->covers())
        for (const plan::Coverage *coverage : *program->covers()) {
          os << ", " << str(coverage->grid()) << " [";
          if (coverage->indices())
            for (unsigned i = 0; i < coverage->indices()->size(); ++i)
              os << (i ? "," : "") << coverage->indices()->Get(i);
          os << "]";
        }
      double maxNorm = 0;
      if (program->steps())
        for (const plan::Step *step : *program->steps())
          if (step->kind() == plan::StepKind::ClipGradNorm)
            maxNorm = step->max_norm();
      if (maxNorm > 0)
        os << ", clips gradients to norm " << maxNorm;
      else
        os << ", no gradient clipping";
      os << "\n";
    }
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
