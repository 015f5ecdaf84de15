//===- Program.cpp - checking the per-rank programs of plan.bin -----------===//

#include "parc/runtime/Program.h"

#include <map>
#include <set>
#include <tuple>
#include <vector>

using namespace parc;
using namespace parc::runtime;

namespace {

const char *kindName(plan::StepKind kind) {
  return plan::EnumNameStepKind(kind);
}

/// This rank's index along a grid of the plan's rank layout; -1 for a grid
/// the layout does not know.
int coordinate(const RankLayout &layout, const std::string &grid) {
  if (grid == "pp")
    return layout.ppIndex;
  if (grid == "dp")
    return layout.dpIndex;
  if (grid == "fsdp")
    return layout.fsdpIndex;
  if (grid == "tp")
    return layout.tpIndex;
  return -1;
}

/// The size of a rank axis of the layout.
int axisSize(const RankLayout &layout, const std::string &axis) {
  if (axis == "pp")
    return layout.pp;
  if (axis == "dp")
    return layout.dp;
  if (axis == "fsdp")
    return layout.fsdp;
  return layout.tp;
}

/// The ranks of grid `name`: 0 when the plan has no such grid, -1 (and
/// `error`) when its shape is not a world of at most 2^17 ranks.
int64_t gridSize(const plan::Plan &plan, const std::string &name,
                 std::string &error) {
  if (plan.grids())
    for (const plan::Grid *grid : *plan.grids())
      if (grid->name()->str() == name) {
        int64_t size = 1;
        if (grid->shape())
          for (int64_t d : *grid->shape())
            if (!growWorld(size, d, "grid '" + printable(name) + "' axis",
                           error))
              return -1;
        return size;
      }
  return 0;
}

/// A message between pipeline stages: from, to, what, micro-batch, bytes.
using Message = std::tuple<int64_t, int64_t, int, int64_t, int64_t>;

class ProgramChecker {
public:
  ProgramChecker(const plan::Plan &plan, const plan::Program &program,
                 std::string &error)
      : plan(plan), program(program), error(error) {
    if (plan.modules())
      for (const plan::Module *module : *plan.modules())
        if (module->layer_index() >= 0)
          layers.insert(str(module->path()));
  }

  /// Checks the program's steps; collects its pipeline sends and receives
  /// (with `stage` as this program's index on the pp grid).
  bool check(int64_t stage, std::multiset<Message> &sends,
             std::multiset<Message> &recvs) {
    steps = program.steps();
    if (!steps || steps->size() == 0)
      return fail(-1, "has no steps");
    for (unsigned i = 0; i < steps->size(); ++i)
      if (!checkStep(i, *steps->Get(i), stage, sends, recvs))
        return false;
    if (!optimizer)
      return fail(-1, "has no optimizer step");
    return checkReleased();
  }

private:
  static bool definesTensor(plan::StepKind kind) {
    return kind != plan::StepKind::Free && kind != plan::StepKind::Wait &&
           kind != plan::StepKind::Forward &&
           kind != plan::StepKind::Backward &&
           kind != plan::StepKind::Recompute &&
           kind != plan::StepKind::OptimizerStep &&
           kind != plan::StepKind::ClipGradNorm;
  }

  static bool readsTensor(plan::StepKind kind) {
    return kind != plan::StepKind::Buffer && kind != plan::StepKind::Alloc &&
           kind != plan::StepKind::Forward &&
           kind != plan::StepKind::Backward &&
           kind != plan::StepKind::Recompute && kind != plan::StepKind::Save &&
           kind != plan::StepKind::OptimizerStep &&
           kind != plan::StepKind::ClipGradNorm;
  }

  bool checkStep(unsigned i, const plan::Step &step, int64_t stage,
                 std::multiset<Message> &sends, std::multiset<Message> &recvs) {
    plan::StepKind kind = step.kind();
    if (optimizer)
      return fail(i, std::string(kindName(kind)) +
                         " after the optimizer step; the optimizer step "
                         "ends the program");
    int64_t micro = step.micro_batch();
    if (micro < -1 || micro >= program.micro_batches())
      return fail(i, "micro-batch " + std::to_string(micro) +
                         " outside the program's " +
                         std::to_string(program.micro_batches()));
    int operand = step.operand();
    if (operand < -1 || operand >= int(defined.size()))
      return fail(i, "reads tensor " + std::to_string(operand) +
                         ", which no earlier step defines");
    if (!checkDefinition(i, step))
      return false;
    if (readsTensor(kind) && operand < 0)
      return fail(i, std::string(kindName(kind)) + " reads no tensor");
    switch (kind) {
    case plan::StepKind::Free:
      return checkFree(i, operand);
    case plan::StepKind::Wait:
      return checkWait(i, operand);
    case plan::StepKind::Forward:
    case plan::StepKind::Backward:
    case plan::StepKind::Recompute:
      return compute(i, step);
    case plan::StepKind::AllGather:
    case plan::StepKind::ReduceScatter:
    case plan::StepKind::AllReduce:
    case plan::StepKind::Send:
    case plan::StepKind::Recv:
      if (operand == scatterInFlight && operand >= 0)
        return fail(i, std::string(kindName(kind)) +
                           " of the reduce-scatter at tensor " +
                           std::to_string(operand) + " before waiting for it");
      return collective(i, step, *definer[operand], stage, sends, recvs);
    case plan::StepKind::OptimizerStep:
      if (scatterInFlight >= 0)
        return fail(i, "OptimizerStep before waiting for the "
                       "reduce-scatter at tensor " +
                           std::to_string(scatterInFlight));
      optimizer = true;
      return true;
    case plan::StepKind::ClipGradNorm:
      return checkClipGradNorm(i, step);
    case plan::StepKind::Buffer:
    case plan::StepKind::Save:
    case plan::StepKind::Alloc:
      return true;
    }
    return true;
  }

  /// The tensor a step defines: the next one, not empty; an FSDP gather or
  /// reduce-scatter goes in flight (one reduce-scatter at a time, one
  /// gather per unit).
  bool checkDefinition(unsigned i, const plan::Step &step) {
    plan::StepKind kind = step.kind();
    int operand = step.operand();
    bool defines = definesTensor(kind);
    if (defines != (step.result() >= 0))
      return fail(i, std::string(kindName(kind)) +
                         (defines ? " defines no tensor"
                                  : " defines a tensor it cannot"));
    if (!defines)
      return true;
    if (step.result() != int(defined.size()))
      return fail(i, "defines tensor " + std::to_string(step.result()) +
                         " where the next is " +
                         std::to_string(defined.size()));
    if (step.elements() <= 0 || step.bytes() <= 0)
      return fail(i, "defines an empty tensor");
    defined.push_back(kind);
    definer.push_back(&step);
    freed.push_back(0);
    gathersUnit.push_back(kind == plan::StepKind::AllGather && operand >= 0 &&
                          defined[operand] == plan::StepKind::Buffer &&
                          definer[operand]->buffer_kind() ==
                              plan::BufferKind::ParamShard);
    scattersUnit.push_back(
        kind == plan::StepKind::ReduceScatter && operand >= 0 &&
        defined[operand] == plan::StepKind::Buffer &&
        definer[operand]->buffer_kind() == plan::BufferKind::Gradient);
    if (scattersUnit.back()) {
      if (scatterInFlight >= 0)
        return fail(i, "reduce-scatters FSDP unit " +
                           unitName(str(definer[operand]->path())) +
                           " before waiting for the reduce-scatter at "
                           "tensor " +
                           std::to_string(scatterInFlight));
      scatterInFlight = step.result();
    }
    if (gathersUnit.back()) {
      std::string unit = str(definer[operand]->path());
      if (unwaited.count(unit))
        return fail(i, "gathers FSDP unit " + unitName(unit) +
                           " again before waiting for its gather at "
                           "tensor " +
                           std::to_string(unwaited[unit]));
      unwaited[unit] = step.result();
    }
    return true;
  }

  /// The unit a gather (tensor `t`) gathers: its param_shard buffer's.
  std::string gatheredUnit(int t) const {
    return std::string(str(definer[definer[t]->operand()]->path()));
  }

  bool checkFree(unsigned i, int operand) {
    plan::StepKind what = defined[operand];
    if (what != plan::StepKind::Save && what != plan::StepKind::AllGather &&
        what != plan::StepKind::Alloc)
      return fail(i, "frees tensor " + std::to_string(operand) + ", a " +
                         kindName(what) +
                         " (only saved activations, gathered units and "
                         "allocations are freed)");
    if (freed[operand]++)
      return fail(i,
                  "frees tensor " + std::to_string(operand) + " a second time");
    if (gathersUnit[operand] && isUnwaited(operand))
      return fail(i, "frees the all-gather of FSDP unit " +
                         unitName(gatheredUnit(operand)) + " (tensor " +
                         std::to_string(operand) + ") before waiting for it");
    return true;
  }

  bool checkWait(unsigned i, int operand) {
    if (scattersUnit[operand]) {
      if (scatterInFlight != operand)
        return fail(i, "waits for the reduce-scatter at tensor " +
                           std::to_string(operand) +
                           ", which is not in flight");
      scatterInFlight = -1;
      return true;
    }
    if (!gathersUnit[operand])
      return fail(i, "waits for tensor " + std::to_string(operand) + ", a " +
                         kindName(defined[operand]) +
                         " (only FSDP all-gathers and reduce-scatters "
                         "are waited for)");
    if (!isUnwaited(operand))
      return fail(i, "waits for the all-gather at tensor " +
                         std::to_string(operand) + " a second time");
    unwaited.erase(gatheredUnit(operand));
    return true;
  }

  bool checkClipGradNorm(unsigned i, const plan::Step &step) {
    if (scatterInFlight >= 0)
      return fail(i, "ClipGradNorm before waiting for the "
                     "reduce-scatter at tensor " +
                         std::to_string(scatterInFlight));
    // The norm is of the reduced gradients the update then uses.
    bool last = i + 1 == steps->size();
    if (last || steps->Get(i + 1)->kind() != plan::StepKind::OptimizerStep)
      return fail(i, "ClipGradNorm does not immediately precede the "
                     "optimizer step");
    if (!(step.max_norm() > 0))
      return fail(i, "ClipGradNorm to max_norm " +
                         std::to_string(step.max_norm()) +
                         " (it must be positive)");
    return true;
  }

  /// Saved activations and gathered FSDP units (an all-gather of a
  /// param_shard buffer) are released in the program; collectives on
  /// activations (TP) live as long as the compute that reads them.
  /// Gradient shards live to the end of the step (the optimizer reads
  /// them). Every forward has its backward.
  bool checkReleased() {
    for (size_t t = 0; t < defined.size(); ++t)
      if ((defined[t] == plan::StepKind::Save ||
           (defined[t] == plan::StepKind::Alloc &&
            definer[t]->alloc_kind() != plan::AllocKind::GradientShards) ||
           (defined[t] == plan::StepKind::AllGather && gathersUnit[t])) &&
          !freed[t])
        return fail(-1, std::string("never frees tensor ") + std::to_string(t) +
                            " (" + kindName(defined[t]) + " of '" +
                            str(definer[t]->path()) + "')");
    for (const auto &[key, state] : computeState)
      if (state != kBackwardDone)
        return fail(-1, "runs the forward of " + describe(key) +
                            " but not its backward");
    return true;
  }
  static std::string unitName(const std::string &path) {
    return path.empty() ? "root" : "'" + path + "'";
  }

  /// A gather of an FSDP unit that is issued and not yet waited for.
  bool isUnwaited(int tensor) const {
    for (const auto &[unit, gathered] : unwaited)
      if (gathered == tensor)
        return true;
    return false;
  }

  /// (path, part, micro-batch, chunk).
  using Key = std::tuple<std::string, std::string, int64_t, int64_t>;
  static constexpr int kForwardDone = 1, kRecomputed = 2, kBackwardDone = 3;

  static std::string describe(const Key &key) {
    const auto &[path, part, micro, chunk] = key;
    std::string what = path.empty() ? "the root's " + part : "'" + path + "'";
    return what + " (micro-batch " + std::to_string(micro) +
           (chunk ? ", chunk " + std::to_string(chunk) : "") + ")";
  }

  bool compute(unsigned i, const plan::Step &step) {
    std::string path = str(step.path()), part = str(step.part());
    if (path.empty() ? part != "head" && part != "tail" : !layers.count(path))
      return fail(i,
                  path.empty()
                      ? "names root part '" + part + "' (head or tail)"
                      : "names '" + path + "', which is no layer of the plan");
    if (step.micro_batch() < 0)
      return fail(i, "has no micro-batch");
    // It computes on its unit's gather and may read the root's.
    for (const std::string &unit : {path, std::string()})
      if (unwaited.count(unit))
        return fail(
            i, std::string(kindName(step.kind())) + " of " +
                   (path.empty() ? "the root's " + part : "'" + path + "'") +
                   " before waiting for the all-gather of FSDP "
                   "unit " +
                   unitName(unit) + " (tensor " +
                   std::to_string(unwaited.at(unit)) + ")");
    Key key{path, part, step.micro_batch(), step.chunk()};
    int &state = computeState[key];
    switch (step.kind()) {
    case plan::StepKind::Forward:
      if (state)
        return fail(i, "runs the forward of " + describe(key) + " again");
      state = kForwardDone;
      return true;
    case plan::StepKind::Recompute:
      if (state != kForwardDone)
        return fail(i, "recomputes " + describe(key) +
                           (state ? " twice or after its backward"
                                  : " before its forward"));
      state = kRecomputed;
      return true;
    default:
      if (state != kForwardDone && state != kRecomputed)
        return fail(i, "runs the backward of " + describe(key) +
                           (state ? " again" : " before its forward"));
      state = kBackwardDone;
      return true;
    }
  }

  bool collective(unsigned i, const plan::Step &step, const plan::Step &input,
                  int64_t stage, std::multiset<Message> &sends,
                  std::multiset<Message> &recvs) {
    std::string grid = str(step.grid());
    std::string why;
    int64_t size = gridSize(plan, grid, why);
    if (size < 0)
      return fail(i, why);
    if (!size)
      return fail(i, std::string(kindName(step.kind())) + " on grid '" + grid +
                         "', which the plan does not have");
    if (step.group())
      for (int64_t index : *step.group())
        if (index < 0 || index >= size)
          return fail(i, "groups index " + std::to_string(index) +
                             " of grid '" + grid + "' of size " +
                             std::to_string(size));
    bool p2p = step.kind() == plan::StepKind::Send ||
               step.kind() == plan::StepKind::Recv;
    if (!p2p)
      return true;
    if (grid != "pp")
      return fail(i, std::string(kindName(step.kind())) + " on grid '" + grid +
                         "', not pp");
    if (step.peer() < 0 || step.peer() >= size || step.peer() == stage)
      return fail(i,
                  std::string(kindName(step.kind())) +
                      (step.kind() == plan::StepKind::Send ? " to" : " from") +
                      " stage " + std::to_string(step.peer()) + " on stage " +
                      std::to_string(stage) + " of " + std::to_string(size) +
                      (step.peer() == stage ? " (itself)" : " (outside)"));
    if (input.kind() != plan::StepKind::Buffer ||
        (input.buffer_kind() != plan::BufferKind::Activation &&
         input.buffer_kind() != plan::BufferKind::ActivationGrad))
      return fail(i, std::string(kindName(step.kind())) +
                         " of a tensor that is no activation buffer");
    bool send = step.kind() == plan::StepKind::Send;
    Message message{send ? stage : step.peer(), send ? step.peer() : stage,
                    int(input.buffer_kind()), input.micro_batch(),
                    input.bytes()};
    (send ? sends : recvs).insert(message);
    return true;
  }

  bool fail(int step, const std::string &why) {
    error = "program '" + std::string(str(program.name())) + "'" +
            (step >= 0 ? " step " + std::to_string(step) : "") + ": " + why;
    return false;
  }

  const plan::Plan &plan;
  const plan::Program &program;
  std::string &error;
  std::set<std::string> layers;
  std::map<Key, int> computeState;
  /// Per FSDP unit path, the tensor of its gather in flight.
  std::map<std::string, int> unwaited;
  const flatbuffers::Vector<flatbuffers::Offset<plan::Step>> *steps = nullptr;
  /// Per tensor: the kind and step that define it, how often it was freed,
  /// and whether it is an FSDP unit's gather or reduce-scatter.
  std::vector<plan::StepKind> defined;
  std::vector<const plan::Step *> definer;
  std::vector<int> freed;
  std::vector<bool> gathersUnit, scattersUnit;
  /// The FSDP reduce-scatter issued and not yet waited for.
  int scatterInFlight = -1;
  bool optimizer = false;
};

/// Whether `program` covers the rank at `layout`'s coordinates.
bool covers(const plan::Program &program, const RankLayout &layout) {
  if (program.covers())
    for (const plan::Coverage *coverage : *program.covers()) {
      int index = coordinate(layout, coverage->grid()->str());
      bool listed = false;
      if (coverage->indices())
        for (int64_t i : *coverage->indices())
          listed |= i == index;
      if (!listed)
        return false;
    }
  return true;
}

} // namespace

bool parc::runtime::verifyPrograms(const plan::Plan &plan,
                                   const RankLayout &layout,
                                   std::string &error) {
  const auto *programs = plan.programs();
  if (!programs || programs->size() == 0) {
    error = "the plan holds no per-rank program; plan it with parc-plan "
            "--emit-plan (or lower it with --lower-to-schedule before "
            "--export-plan)";
    return false;
  }
  std::multiset<Message> sends, recvs;
  const plan::Program *first = nullptr;
  for (const plan::Program *program : *programs) {
    std::string name = str(program->name());
    if (program->micro_batches() < 1 || program->batch() < 1 ||
        program->seq() < 1) {
      error = "program '" + name + "' records " +
              std::to_string(program->micro_batches()) + " micro-batches of " +
              std::to_string(program->batch()) + " sequences of " +
              std::to_string(program->seq()) +
              " tokens; a plan.bin written before programs carried their "
              "batch must be planned again";
      return false;
    }
    if (first && (program->micro_batches() != first->micro_batches() ||
                  program->batch() != first->batch() ||
                  program->seq() != first->seq())) {
      auto shape = [](const plan::Program &p) {
        return std::to_string(p.micro_batches()) + " micro-batches of " +
               std::to_string(p.batch()) + " x " + std::to_string(p.seq()) +
               " tokens";
      };
      error = "program '" + name + "' trains on " + shape(*program) +
              ", program '" + str(first->name()) + "' on " + shape(*first) +
              "; every rank trains on one batch";
      return false;
    }
    first = first ? first : program;
    int64_t stage = 0;
    if (program->covers())
      for (const plan::Coverage *coverage : *program->covers()) {
        std::string grid = coverage->grid()->str();
        std::string why;
        int64_t size = gridSize(plan, grid, why);
        if (size < 0) {
          error = "program '" + name + "': " + why;
          return false;
        }
        if (!size || coordinate(layout, grid) < 0) {
          error = "program '" + name + "' covers grid '" + grid +
                  "', which is no rank axis of the plan";
          return false;
        }
        std::set<int64_t> indices;
        if (coverage->indices())
          for (int64_t i : *coverage->indices())
            if (i < 0 || i >= size || !indices.insert(i).second) {
              error = "program '" + name + "' covers index " +
                      std::to_string(i) + " of grid '" + grid + "' (size " +
                      std::to_string(size) + ") " +
                      (i < 0 || i >= size ? "outside it" : "twice");
              return false;
            }
        if (grid == "pp" && indices.size() == 1)
          stage = *indices.begin();
      }
    // Ranks: the listed indices of each listed grid times the sizes of the
    // rank axes it does not list.
    int64_t expected = 1;
    for (const char *axis : {"pp", "dp", "fsdp", "tp"}) {
      int64_t count = 0;
      bool listed = false;
      if (program->covers())
        for (const plan::Coverage *coverage : *program->covers())
          if (coverage->grid()->str() == axis) {
            listed = true;
            count = coverage->indices() ? coverage->indices()->size() : 0;
          }
      expected *= listed ? count : axisSize(layout, axis);
    }
    if (program->ranks() != expected) {
      error = "program '" + name + "' says it runs on " +
              std::to_string(program->ranks()) + " ranks; its coverage is " +
              std::to_string(expected);
      return false;
    }
    if (layout.pp > 1 && program->micro_batches() != layout.microbatches) {
      error = "program '" + name + "' runs " +
              std::to_string(program->micro_batches()) +
              " micro-batches, the plan's pipeline " +
              std::to_string(layout.microbatches);
      return false;
    }
    if (!ProgramChecker(plan, *program, error).check(stage, sends, recvs))
      return false;
  }
  // Every rank runs exactly one program.
  for (int rank = 0; rank < layout.world; ++rank) {
    RankLayout at = layout;
    at.place(rank);
    int count = 0;
    for (const plan::Program *program : *programs)
      count += covers(*program, at);
    if (count != 1) {
      error = "rank " + std::to_string(rank) + " runs " +
              std::to_string(count) + " programs; every rank runs one";
      return false;
    }
  }
  // Name one message that is not matched, from the side that has more.
  for (bool fromSender : {true, false})
    for (const Message &m : fromSender ? sends : recvs) {
      size_t sent = sends.count(m), received = recvs.count(m);
      if (sent == received)
        continue;
      auto [from, to, kind, micro, bytes] = m;
      (void)kind;
      std::string what = " message(s) of " + std::to_string(bytes) +
                         " bytes for micro-batch " + std::to_string(micro);
      error = fromSender ? "stage " + std::to_string(from) + " sends " +
                               std::to_string(sent) + what + " to stage " +
                               std::to_string(to) + ", which receives " +
                               std::to_string(received)
                         : "stage " + std::to_string(to) + " receives " +
                               std::to_string(received) + what +
                               " from stage " + std::to_string(from) +
                               ", which sends " + std::to_string(sent);
      return false;
    }
  return true;
}

const plan::Program *parc::runtime::rankProgram(const plan::Plan &plan,
                                                const RankLayout &layout) {
  if (plan.programs())
    for (const plan::Program *program : *plan.programs())
      if (covers(*program, layout))
        return program;
  return nullptr;
}

ProgramBatch parc::runtime::programBatch(const plan::Program &program) {
  return {program.micro_batches(), program.batch(), program.seq()};
}

namespace {

/// A step's dotted path, "root" for the root's.
std::string pathOrRoot(const plan::Step &step) {
  std::string path = str(step.path());
  return path.empty() ? "root" : path;
}

std::string partName(const plan::Step &step) {
  std::string path = str(step.path());
  if (!path.empty())
    return path;
  return std::string(str(step.part())) == "head" ? "embedding" : "loss";
}

const char *bufferKindName(plan::BufferKind kind) {
  switch (kind) {
  case plan::BufferKind::ParamShard:
    return "param_shard";
  case plan::BufferKind::Gradient:
    return "gradient";
  case plan::BufferKind::Activation:
    return "activation";
  case plan::BufferKind::ActivationGrad:
    return "activation_grad";
  }
  return "buffer";
}

} // namespace

std::string parc::runtime::stepName(const plan::Program &program,
                                    size_t index) {
  const auto &steps = *program.steps();
  const plan::Step &step = *steps[index];
  // The step that defined a tensor (tensors are numbered in step order).
  auto definer = [&](int tensor) -> const plan::Step * {
    if (tensor < 0)
      return nullptr;
    for (size_t i = 0; i < index; ++i)
      if (steps[i]->result() == tensor)
        return steps[i];
    return nullptr;
  };
  const plan::Step *input = definer(step.operand());
  // The buffer or save a tensor comes from, through the collectives on it.
  const plan::Step *origin = input;
  while (origin && origin->kind() != plan::StepKind::Buffer &&
         origin->kind() != plan::StepKind::Save)
    origin = definer(origin->operand());
  std::string of = origin ? str(origin->path()) : "";
  std::string unit = of.empty() ? "root" : of;
  bool buffer = origin && origin->kind() == plan::StepKind::Buffer;
  plan::BufferKind kind =
      buffer ? origin->buffer_kind() : plan::BufferKind::Activation;
  bool grads = buffer && kind == plan::BufferKind::ActivationGrad;
  switch (step.kind()) {
  case plan::StepKind::Forward:
    return "forward " + partName(step);
  case plan::StepKind::Backward:
    return "backward " + partName(step);
  case plan::StepKind::Recompute:
    return "recompute " + partName(step);
  case plan::StepKind::OptimizerStep:
    return "optimizer step";
  case plan::StepKind::ClipGradNorm:
    return "clip grad norm";
  case plan::StepKind::AllGather:
    return buffer && kind != plan::BufferKind::ParamShard
               ? std::string("all-gather ") + bufferKindName(kind) + " " + of
               : "all-gather " + unit;
  case plan::StepKind::ReduceScatter:
    return buffer && kind != plan::BufferKind::Gradient
               ? std::string("reduce-scatter ") + bufferKindName(kind) + " " +
                     of
               : "reduce-scatter " + unit;
  case plan::StepKind::AllReduce:
    return "all-reduce " + std::string(str(step.grid())) + " " + unit;
  case plan::StepKind::Send:
    return grads ? "send activation gradients" : "send activations";
  case plan::StepKind::Recv:
    return grads ? "recv activation gradients" : "recv activations";
  case plan::StepKind::Buffer:
    return std::string("buffer ") + bufferKindName(step.buffer_kind()) + " " +
           pathOrRoot(step);
  case plan::StepKind::Save:
    return "save " + partName(step);
  case plan::StepKind::Alloc:
    return std::string("alloc ") + plan::EnumNameAllocKind(step.alloc_kind()) +
           " " + pathOrRoot(step);
  case plan::StepKind::Wait:
    return (input && input->kind() == plan::StepKind::ReduceScatter
                ? "wait reduce-scatter "
                : "wait all-gather ") +
           unit;
  case plan::StepKind::Free:
    if (origin && origin->kind() == plan::StepKind::Save)
      return "free saved " + partName(*origin);
    if (input && input->kind() == plan::StepKind::Alloc)
      return std::string("free ") +
             plan::EnumNameAllocKind(input->alloc_kind()) + " " +
             pathOrRoot(*input);
    return "free " + unit;
  }
  return "step";
}

StepTrack parc::runtime::stepTrack(const plan::Step &step) {
  switch (step.kind()) {
  case plan::StepKind::Forward:
  case plan::StepKind::Backward:
  case plan::StepKind::Recompute:
  case plan::StepKind::ClipGradNorm:
  case plan::StepKind::OptimizerStep:
  case plan::StepKind::Wait: // the compute stream stalls there
    return StepTrack::Compute;
  case plan::StepKind::Buffer:
  case plan::StepKind::Save:
  case plan::StepKind::Alloc:
  case plan::StepKind::Free:
    return StepTrack::Memory;
  default:
    return StepTrack::Communication;
  }
}
