//===- Trainer.cpp - the training loop of parc-run ------------------------===//
//
// The step, in the order a trainer runs it: for each micro-batch, forward
// (gathers and frees follow the plan's units) and backward (reduce-scatters
// into the shards); then the global gradient norm over the shards, clipping,
// AdamW on the fp32 masters, and the report. Checkpoints hold each rank's
// shards and optimizer state (a tie group once) with a manifest of checksums.
//
//===----------------------------------------------------------------------===//

#include "parc/runtime/Trainer.h"

#include "parc/runtime/Checkpoint.h"
#include "parc/runtime/Program.h"
#include "parc/runtime/RunTrace.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/autograd/autograd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <malloc.h>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

using namespace parc;
using namespace parc::runtime;

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

namespace {

std::atomic<int64_t> gLive{0};
std::atomic<int64_t> gPeak{0};

/// Where host allocations stop coming from glibc's heap and become their
/// own mappings (glibc's own dynamic maximum): the heap policy below and the
/// tracking allocator's block cache split the sizes there.
constexpr size_t kMmapThreshold = size_t(32) << 20;

/// Freed blocks of kMmapThreshold and more, kept by size for the next
/// request of that size: a training step allocates the same large tensors
/// every step, and each fresh mapping faulted its pages in again
/// (llama-125m at seq 256, micro-batch 4: 228,000 page faults a step).
/// Sizes are rounded to 2 MiB; at most kLimit bytes are held free.
class LargeBlockCache {
public:
  static constexpr size_t kRound = size_t(2) << 20;
  static constexpr size_t kLimit = size_t(4) << 30;

  /// Never destroyed: tensors of other static objects are released after
  /// this file's statics would be.
  static LargeBlockCache &get() {
    static auto *cache = new LargeBlockCache;
    return *cache;
  }
  static size_t roundUp(size_t bytes) {
    return (bytes + kRound - 1) / kRound * kRound;
  }
  char *take(size_t block) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = blocks.find(block);
    if (it == blocks.end())
      return nullptr;
    char *base = it->second;
    blocks.erase(it);
    freeBytes -= block;
    return base;
  }
  /// Keeps `base` unless that would hold more than kLimit free.
  bool put(size_t block, char *base) {
    std::lock_guard<std::mutex> lock(mutex);
    if (freeBytes + block > kLimit)
      return false;
    blocks.emplace(block, base);
    freeBytes += block;
    return true;
  }

private:
  std::mutex mutex;
  std::unordered_multimap<size_t, char *> blocks;
  size_t freeBytes = 0;
};

/// Counts the bytes of every live CPU tensor allocation (autograd's saved
/// tensors included); the request and the block's size sit in a 64-byte
/// header so that the data keeps c10's alignment. The context is the data
/// pointer itself, as Allocator::raw_allocate requires (oneDNN's bf16
/// kernels allocate through it), and release() finds the header from it.
/// Large blocks go through LargeBlockCache; the counts are of the requests,
/// not the cache: what the memory model predicts is what tensors hold.
class TrackingAllocator final : public c10::Allocator {
public:
  static constexpr size_t kHeader = 64;
  struct Header {
    size_t request, block;
  };
  static_assert(sizeof(Header) <= kHeader);

  c10::DataPtr allocate(size_t n) const override {
    size_t block = n + kHeader;
    char *base = nullptr;
    if (block >= kMmapThreshold) {
      block = LargeBlockCache::roundUp(block);
      base = LargeBlockCache::get().take(block);
    }
    if (!base)
      base = static_cast<char *>(c10::alloc_cpu(block));
    *reinterpret_cast<Header *>(base) = {n, block};
    int64_t live = gLive.fetch_add(n) + n;
    int64_t peak = gPeak.load();
    while (live > peak && !gPeak.compare_exchange_weak(peak, live)) {
    }
    void *data = base + kHeader;
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  static void release(void *data) {
    if (!data)
      return;
    char *base = static_cast<char *>(data) - kHeader;
    Header header = *reinterpret_cast<Header *>(base);
    gLive.fetch_sub(header.request);
    if (header.block >= kMmapThreshold &&
        LargeBlockCache::get().put(header.block, base))
      return;
    c10::free_cpu(base);
  }
};

/// Keeps a step's freed memory for the next step. glibc's dynamic thresholds
/// follow the largest freed chunk, so after a step the heap's top was
/// trimmed back to the kernel and every step faulted its tensors' pages in
/// again: 5,300 page faults a step for llama-tiny at seq 256, micro-batch 4,
/// about a tenth of the step (PyTorch eager, whose allocation order differs,
/// faulted none). Tensors under kMmapThreshold come from the heap, and up to
/// 1 GiB of free heap top is kept: 143 faults a step. The user's MALLOC_*
/// settings win.
void keepHeapAcrossSteps() {
  for (const char *name : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                           "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"})
    if (std::getenv(name))
      return;
  ::mallopt(M_MMAP_THRESHOLD, int(kMmapThreshold));
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

} // namespace

void parc::runtime::installTrackingAllocator() {
  keepHeapAcrossSteps();
  static TrackingAllocator allocator;
  c10::SetCPUAllocator(&allocator, /*priority=*/100);
}
int64_t parc::runtime::liveBytes() { return gLive.load(); }
int64_t parc::runtime::peakBytes() { return gPeak.load(); }
void parc::runtime::resetPeakBytes() { gPeak.store(gLive.load()); }

//===----------------------------------------------------------------------===//
// Data
//===----------------------------------------------------------------------===//

namespace {

/// Token sequences indexed by their global sample number, so every world
/// size sees the same samples: a seeded synthetic stream, or windows of a
/// nanoGPT-style file of uint16/uint32 token ids.
class TokenSource {
public:
  TokenSource(const TrainOptions &options, int64_t vocab, int64_t seq)
      : seed(options.seed), vocab(vocab), seq(seq), path(options.dataPath) {
    if (path.empty())
      return;
    std::ifstream in(path, std::ios::binary);
    if (!in)
      throw std::runtime_error(path + ": cannot open token file");
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    size_t width = options.dataBits / 8;
    if (bytes.size() % width)
      throw std::runtime_error(path + ": " + std::to_string(bytes.size()) +
                               " bytes is not a whole number of uint" +
                               std::to_string(options.dataBits) + " tokens");
    size_t count = bytes.size() / width;
    tokens.resize(count);
    for (size_t i = 0; i < count; ++i) {
      uint32_t v = 0;
      if (width == 2) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        v = h;
      } else {
        std::memcpy(&v, bytes.data() + 4 * i, 4);
      }
      if (v >= vocab)
        throw std::runtime_error(
            path + ": token " + std::to_string(i) + " is " + std::to_string(v) +
            ", outside the model's vocabulary of " + std::to_string(vocab));
      tokens[i] = v;
    }
    if (static_cast<int64_t>(count) < seq + 2)
      throw std::runtime_error(path + ": " + std::to_string(count) +
                               " tokens, fewer than one sequence of " +
                               std::to_string(seq + 1));
  }

  /// Samples [first, first + count) as (ids, labels), each [count, seq].
  std::pair<at::Tensor, at::Tensor> batch(int64_t first, int64_t count) {
    at::Tensor rows = at::empty({count, seq + 1}, at::kLong);
    for (int64_t i = 0; i < count; ++i) {
      int64_t sample = first + i;
      if (tokens.empty()) {
        at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(
            fnv1a(&sample, sizeof sample, seed));
        rows[i].copy_(at::randint(vocab, {seq + 1}, gen, at::kLong));
      } else {
        int64_t span = static_cast<int64_t>(tokens.size()) - seq - 1;
        int64_t offset = (sample * seq) % span;
        auto *row = rows[i].data_ptr<int64_t>();
        for (int64_t t = 0; t <= seq; ++t)
          row[t] = tokens[offset + t];
      }
    }
    return {rows.narrow(1, 0, seq).contiguous(),
            rows.narrow(1, 1, seq).contiguous()};
  }

private:
  uint64_t seed;
  int64_t vocab, seq;
  std::string path;
  std::vector<uint32_t> tokens;
};

//===----------------------------------------------------------------------===//
// Checkpoints
//===----------------------------------------------------------------------===//

std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": missing");
  return std::vector<char>((std::istreambuf_iterator<char>(in)),
                           std::istreambuf_iterator<char>());
}

/// Writes `bytes` to `path` through a temporary name and a rename, so a
/// crash leaves the old file or the new one, never half of one.
void writeAtomically(const std::string &path, const std::string &bytes) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), bytes.size());
    out.flush();
    if (!out)
      throw std::runtime_error(tmp + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(path + ": cannot rename " + tmp +
                             " to it: " + std::strerror(errno));
}

template <typename T>
void put(std::string &out, const T &v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof v);
}

void saveCheckpoint(const std::string &dir, const PlanFile &plan,
                    Executor &exec, int64_t step) {
  Collectives &comm = exec.collectives();
  ::mkdir(dir.c_str(), 0755);
  std::string bytes(kShardMagic, sizeof kShardMagic);
  put(bytes, kCheckpointVersion);
  put(bytes, static_cast<uint64_t>(step));
  // Which rank and plan the shard belongs to, so that a shard put in
  // another rank's place (its manifest entry and checksum copied) is refused.
  put(bytes, static_cast<uint32_t>(comm.rank()));
  put(bytes, fnv1a(plan.data().data(), plan.data().size()));
  uint32_t local = 0;
  for (ParamSlot &slot : exec.slots())
    local += slot.local;
  put(bytes, local);
  for (ParamSlot &slot : exec.slots()) {
    // A pipeline stage saves the parameters it holds.
    if (!slot.local)
      continue;
    put(bytes, static_cast<uint32_t>(slot.path.size()));
    bytes += slot.path;
    put(bytes, static_cast<uint64_t>(slot.master.numel()));
    for (const at::Tensor &t : {slot.master, slot.expAvg, slot.expAvgSq}) {
      at::Tensor c = t.detach().contiguous();
      bytes.append(static_cast<const char *>(c.data_ptr()),
                   c.numel() * sizeof(float));
    }
  }
  std::string file = dir + "/" + shardName(comm.rank());
  writeAtomically(file, bytes);
  writeAtomically(file + ".sum", std::to_string(bytes.size()) + " " +
                                     hex(fnv1a(bytes.data(), bytes.size())));
  comm.barrier();
  if (comm.rank() == 0) {
    std::ostringstream manifest;
    manifest << "{\"format\": " << kCheckpointVersion << ", \"plan\": \""
             << hex(fnv1a(plan.data().data(), plan.data().size()))
             << "\", \"world\": " << comm.size() << ", \"step\": " << step
             << ", \"shards\": [";
    for (int r = 0; r < comm.size(); ++r) {
      std::string sumPath = dir + "/" + shardName(r) + ".sum";
      std::vector<char> sum = readFile(sumPath);
      std::istringstream in(std::string(sum.begin(), sum.end()));
      std::string size, checksum;
      in >> size >> checksum;
      manifest << (r ? ", " : "") << "{\"rank\": " << r << ", \"file\": \""
               << shardName(r) << "\", \"bytes\": " << size << ", \"fnv1a\": \""
               << checksum << "\"}";
      std::remove(sumPath.c_str());
    }
    manifest << "]}\n";
    writeAtomically(dir + "/manifest.json", manifest.str());
  }
  comm.barrier();
}

/// Restores this rank's shards; returns the step the checkpoint was taken
/// after. Refuses a checkpoint of another plan or world size, a step outside
/// the run, a malformed manifest, and a missing, truncated, altered or
/// misplaced shard.
int64_t loadCheckpoint(const std::string &dir, const PlanFile &plan,
                       Executor &exec, int64_t steps) {
  Collectives &comm = exec.collectives();
  ResumeTarget target;
  target.planSum = hex(fnv1a(plan.data().data(), plan.data().size()));
  target.planPath = plan.path();
  target.world = comm.size();
  target.rank = comm.rank();
  target.steps = steps;
  std::string manifestPath = dir + "/manifest.json";
  std::vector<char> raw = readFile(manifestPath);
  ManifestEntry entry =
      readManifest(manifestPath, std::string(raw.begin(), raw.end()), target);
  std::string file = dir + "/" + entry.file;
  std::vector<char> bytes = readFile(file);
  ShardReader reader(file, bytes);
  auto take = [&](void *out, size_t n) { reader.take(out, n); };
  uint32_t count = readShardHeader(reader, bytes, entry, target), local = 0;
  for (ParamSlot &slot : exec.slots())
    local += slot.local;
  if (count != local)
    throw std::runtime_error(file + ": holds " + std::to_string(count) +
                             " parameters, this rank's part of the plan has " +
                             std::to_string(local));
  at::NoGradGuard noGrad;
  for (ParamSlot &slot : exec.slots()) {
    if (!slot.local)
      continue;
    std::string path = reader.takeString();
    uint64_t numel;
    take(&numel, sizeof numel);
    if (path != slot.path || numel != uint64_t(slot.master.numel()))
      throw std::runtime_error(
          file + ": parameter '" + printable(path) + "' (" +
          std::to_string(numel) + " values) where the plan has '" + slot.path +
          "' (" + std::to_string(slot.master.numel()) + ")");
    for (at::Tensor *t : {&slot.master, &slot.expAvg, &slot.expAvgSq})
      take(t->data_ptr(), numel * sizeof(float));
  }
  return entry.step;
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

void appendLine(const std::string &path, const std::string &line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0)
    throw std::runtime_error(path +
                             ": cannot open log: " + std::strerror(errno));
  // One write per line: concurrent ranks' lines do not interleave.
  ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
  if (written != static_cast<ssize_t>(line.size()))
    throw std::runtime_error(path + ": cannot write log");
}

/// What one training step measured, over every rank.
struct StepStats {
  double loss = 0, gradNorm = 0;
};

std::string mib(int64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2) << bytes / 1048576.0 << " MiB";
  return os.str();
}

/// The step's line on rank 0's console and every rank's JSON log line.
void reportStep(const TrainOptions &options, int rank, int64_t t,
                const StepStats &stats, double tokensPerS, int64_t measured,
                int64_t predicted) {
  double ratio = predicted ? double(measured) / predicted : 0.0;
  if (rank == 0 && !options.quiet) {
    std::cout << "step " << t << "/" << options.steps << "  loss "
              << std::setprecision(7) << stats.loss << "  grad_norm "
              << stats.gradNorm << "  tokens/s " << std::setprecision(5)
              << tokensPerS << "  peak " << mib(measured);
    if (predicted)
      std::cout << "  predicted " << mib(predicted) << "  ratio "
                << std::setprecision(3) << ratio;
    std::cout << std::endl;
  }
  if (!options.logPath.empty()) {
    std::ostringstream line;
    line << std::setprecision(17) << "{\"step\": " << t
         << ", \"rank\": " << rank << ", \"loss\": " << stats.loss
         << ", \"grad_norm\": " << stats.gradNorm
         << ", \"tokens_per_s\": " << tokensPerS
         << ", \"measured_peak_bytes\": " << measured
         << ", \"predicted_peak_bytes\": " << predicted
         << ", \"peak_ratio\": " << ratio << "}\n";
    appendLine(options.logPath, line.str());
  }
}

/// The run's trace: the whole file on one rank, FILE.rank-R for the
/// launcher to join otherwise.
void writeTrace(const RunTrace &tracer, const std::string &path,
                const Collectives &comm) {
  if (comm.size() == 1) {
    RunTrace::write(path, {tracer.events()});
    return;
  }
  std::string part = path + ".rank-" + std::to_string(comm.rank());
  std::ofstream out(part, std::ios::trunc);
  out << tracer.events();
  if (!out)
    throw std::runtime_error(part + ": cannot write trace");
}

//===----------------------------------------------------------------------===//
// The step
//===----------------------------------------------------------------------===//

/// --fault: on its rank and step, after the first micro-batch's forward.
void injectFault(const TrainOptions &options, int rank, int64_t t,
                 int64_t micro) {
  if (rank != options.faultRank || t != options.faultStep || micro != 0)
    return;
  std::cerr << "parc-run: rank " << rank << ": injected fault '"
            << options.faultKind << "' at step " << t << std::endl;
  if (options.faultKind == "kill")
    std::raise(SIGKILL);
  if (options.faultKind == "exit")
    std::_Exit(7);
  while (true)
    std::this_thread::sleep_for(std::chrono::seconds(1));
}

/// The program's clip_grad_norm: scales every gradient shard down to the
/// plan's norm (torch.nn.utils.clip_grad_norm_).
void clipGradients(Executor &exec, double maxNorm, double gradNorm) {
  double coef = maxNorm / (gradNorm + 1e-6);
  if (coef >= 1.0)
    return;
  for (ParamSlot &slot : exec.slots())
    if (slot.local && !slot.frozen && slot.master.grad().defined())
      slot.master.mutable_grad().mul_(coef);
}

/// AdamW (decoupled weight decay, bias-corrected moments), as
/// torch.optim.AdamW, on the fp32 master shards, at step `t` (from 1).
void adamw(Executor &exec, const TrainOptions &options, int64_t t) {
  double bias1 = 1 - std::pow(options.beta1, t);
  double bias2 = 1 - std::pow(options.beta2, t);
  for (ParamSlot &slot : exec.slots()) {
    if (!slot.local || slot.frozen || !slot.master.grad().defined())
      continue;
    at::Tensor grad = slot.master.grad();
    at::Tensor p = slot.master.detach();
    p.mul_(1 - options.lr * options.weightDecay);
    slot.expAvg.lerp_(grad, 1 - options.beta1);
    slot.expAvgSq.mul_(options.beta2).addcmul_(grad, grad, 1 - options.beta2);
    // One temporary the size of the parameter, as torch.optim.AdamW.
    at::Tensor denom = slot.expAvgSq.sqrt();
    denom.div_(std::sqrt(bias2)).add_(options.eps);
    p.addcdiv_(slot.expAvg, denom, -options.lr / bias1);
    slot.master.mutable_grad() = at::Tensor();
  }
}

/// Writes `tensors` (name, contiguous CPU fp32 or int64 tensor) and the
/// string metadata as a safetensors file: an 8-byte little-endian header
/// length, the JSON header (padded with spaces to 8 bytes), the data.
void writeSafetensors(
    const std::string &path,
    const std::vector<std::pair<std::string, at::Tensor>> &tensors,
    const std::vector<std::pair<std::string, std::string>> &metadata) {
  std::ostringstream header;
  header << "{\"__metadata__\":{";
  for (size_t i = 0; i < metadata.size(); ++i)
    header << (i ? "," : "") << '"' << metadata[i].first << "\":\""
           << metadata[i].second << '"';
  header << "}";
  int64_t offset = 0;
  for (const auto &[name, tensor] : tensors) {
    int64_t bytes = tensor.numel() * tensor.element_size();
    header << ",\"" << name << "\":{\"dtype\":\""
           << (tensor.scalar_type() == at::kLong ? "I64" : "F32")
           << "\",\"shape\":[";
    for (int64_t d = 0; d < tensor.dim(); ++d)
      header << (d ? "," : "") << tensor.size(d);
    header << "],\"data_offsets\":[" << offset << "," << offset + bytes << "]}";
    offset += bytes;
  }
  header << "}";
  std::string json = header.str();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string bytes;
  put(bytes, static_cast<uint64_t>(json.size()));
  bytes += json;
  for (const auto &[name, tensor] : tensors)
    bytes.append(static_cast<const char *>(tensor.data_ptr()),
                 tensor.numel() * tensor.element_size());
  writeAtomically(path, bytes);
}

/// What --dump writes of step 1, before the gradients are clipped and the
/// parameters updated (world 1: every slot is whole and local).
void dumpStep(const std::string &path, Executor &exec,
              const std::vector<at::Tensor> &ids,
              const std::vector<at::Tensor> &labels, double loss) {
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  tensors.emplace_back("input_ids", at::cat(ids).contiguous());
  tensors.emplace_back("labels", at::cat(labels).contiguous());
  tensors.emplace_back("loss", at::full({}, loss, at::kFloat));
  for (ParamSlot &slot : exec.slots()) {
    at::Tensor value =
        slot.master.detach().narrow(0, 0, slot.fullShape[0]).to(at::kFloat);
    tensors.emplace_back(slot.path, value.contiguous());
    if (slot.master.grad().defined())
      tensors.emplace_back("grad." + slot.path,
                           slot.master.grad()
                               .narrow(0, 0, slot.fullShape[0])
                               .to(at::kFloat)
                               .contiguous());
  }
  writeSafetensors(path, tensors, {{"format", "pt"}, {"source", "parc-run"}});
}

/// Runs step `step` (from 0): the program is the step, the interpreter
/// runs its steps in order and calls back for the data, the gradient
/// clipping and the optimizer step.
StepStats runStep(Executor &exec, const plan::Program &program,
                  const ProgramBatch &shape, TokenSource &data,
                  const TrainOptions &options, int64_t step, RunTrace *tracer) {
  Collectives &comm = exec.collectives();
  const RankLayout &layout = exec.rankLayout();
  int64_t dp = layout.dataParallel();
  int64_t gbs = shape.global(dp), mbs = shape.batch;
  int64_t t = step + 1;
  StepStats stats;
  ProgramHooks hooks;
  // Micro-batch a of data shard d: samples step * gbs + (a * dp + d) * mbs.
  bool dump = step == 0 && !options.dumpPath.empty();
  std::vector<at::Tensor> dumpIds, dumpLabels;
  hooks.batch = [&](int64_t micro) {
    auto batch = data.batch(
        step * gbs + micro * mbs * dp + layout.dataIndex() * mbs, mbs);
    if (dump) {
      dumpIds.push_back(batch.first);
      dumpLabels.push_back(batch.second);
    }
    return batch;
  };
  hooks.afterForward = [&](int64_t micro) {
    injectFault(options, comm.rank(), t, micro);
  };
  // Global gradient norm over the shards: padding rows have zero
  // gradients, a tie group is one slot, and gradSquares leaves out the
  // copies (TP-replicated, tied across stages), so each value counts once.
  // The loss is counted by the last stage's TP rank 0 of each data shard.
  bool normed = false;
  auto measure = [&](double lossSum) {
    at::Tensor sumSq = at::zeros({2}, at::kDouble);
    sumSq[0] = exec.gradSquares();
    sumSq[1] = layout.isLastStage() && layout.tpIndex == 0
                   ? lossSum / shape.microBatches
                   : 0.0;
    comm.allReduceSum(sumSq);
    stats.gradNorm = std::sqrt(sumSq[0].item<double>());
    stats.loss = sumSq[1].item<double>() / dp;
    normed = true;
  };
  hooks.clip = [&](double maxNorm, double lossSum) {
    at::NoGradGuard noGrad;
    measure(lossSum);
    if (dump)
      dumpStep(options.dumpPath, exec, dumpIds, dumpLabels, stats.loss);
    dump = false;
    clipGradients(exec, maxNorm, stats.gradNorm);
  };
  hooks.optimizer = [&](double lossSum) {
    at::NoGradGuard noGrad;
    if (!normed)
      measure(lossSum);
    if (dump)
      dumpStep(options.dumpPath, exec, dumpIds, dumpLabels, stats.loss);
    adamw(exec, options, t);
  };
  if (tracer)
    hooks.executed = [&](size_t index, double start, double duration) {
      tracer->executed(step, index, start, duration, liveBytes());
    };
  exec.runProgram(program, hooks);
  return stats;
}

} // namespace

//===----------------------------------------------------------------------===//
// The loop
//===----------------------------------------------------------------------===//

void parc::runtime::train(const PlanFile &planFile, Executor &exec,
                          const TrainOptions &options) {
  const plan::Plan &plan = planFile.plan();
  Collectives &comm = exec.collectives();
  const plan::Prediction *prediction = plan.prediction();
  const RankLayout &layout = exec.rankLayout();
  // The batch is the program's: micro_batches micro-batches (gradient
  // accumulation, or the pipeline's) of `batch` sequences on each data
  // shard (FSDP shards and dp replicas; TP and pipeline peers of a rank see
  // its samples).
  const plan::Program *program = rankProgram(plan, layout);
  if (!program)
    throw std::runtime_error(planFile.path() + ": no program covers rank " +
                             std::to_string(comm.rank()));
  ProgramBatch shape = programBatch(*program);
  int64_t gbs = shape.global(layout.dataParallel());
  // With a pipeline each stage has its own prediction.
  int64_t predicted = prediction ? prediction->peak_bytes() : 0;
  if (prediction && prediction->stage_peak_bytes() &&
      layout.ppIndex < int(prediction->stage_peak_bytes()->size()))
    predicted = prediction->stage_peak_bytes()->Get(layout.ppIndex);

  if (!options.dumpPath.empty() && comm.size() != 1)
    throw std::runtime_error("--dump writes a whole model's step: it needs a "
                             "world-1 plan, and this one has " +
                             std::to_string(comm.size()) + " ranks");
  TokenSource data(options, exec.vocabSize(), shape.seq);
  std::unique_ptr<RunTrace> tracer;
  if (!options.tracePath.empty())
    tracer = std::make_unique<RunTrace>(*program, comm.rank());
  int64_t firstStep = 0;
  if (!options.resumeDir.empty())
    firstStep =
        loadCheckpoint(options.resumeDir, planFile, exec, options.steps);

  for (int64_t step = firstStep; step < options.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    resetPeakBytes();
    if (std::getenv("PARC_RUN_MEMORY_DEBUG"))
      std::cerr << "rank " << comm.rank() << " step " << step + 1
                << " start: live " << liveBytes() << std::endl;
    StepStats stats =
        runStep(exec, *program, shape, data, options, step, tracer.get());
    int64_t t = step + 1;
    // A diverged step ends the run: its numbers are not a result, and a
    // JSON log cannot hold them.
    if (!std::isfinite(stats.loss) || !std::isfinite(stats.gradNorm)) {
      std::ostringstream message;
      message << "step " << t << ": the loss is " << stats.loss
              << " and the gradient norm " << stats.gradNorm
              << "; the run diverged and stops here";
      throw std::runtime_error(message.str());
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    reportStep(options, comm.rank(), t, stats, gbs * shape.seq / seconds,
               peakBytes(), predicted);
    bool last = t == options.steps;
    if (!options.saveDir.empty() &&
        ((options.saveEvery > 0 && t % options.saveEvery == 0) || last))
      saveCheckpoint(options.saveDir, planFile, exec, t);
  }
  if (tracer)
    writeTrace(*tracer, options.tracePath, comm);
}
