//===- Collectives.cpp - c10d process groups behind one seam --------------===//
//
// Gloo (LibTorch 1.13 and later) and, when the LibTorch found is a CUDA
// build, NCCL. Gloo in 1.13 refuses reduce_scatter and _allgather_base, so
// reduce-scatter is an alltoall_base plus a local sum (the bytes a ring
// reduce-scatter moves: each rank sends (n-1)/n of its buffer), completed
// when it is started, and all-gather is one broadcast from each rank of its
// slice of the output, in rank order: Gloo's list-form allgather would stage a flat copy of the
// whole output on its worker thread, bytes that exist for as long as the
// gather runs, which an asynchronous gather makes overlap whatever compute
// happens to run then. NCCL gathers in place with _allgather_base.
//
//===----------------------------------------------------------------------===//

#include "parc/runtime/Collectives.h"

#include <chrono>
#include <thread>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef PARC_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <stdexcept>

using namespace parc::runtime;

namespace {

std::string rankList(const std::vector<int> &ranks) {
  std::string out;
  for (int r : ranks)
    out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

/// A collective that completed when it was started (one rank).
class Completed final : public PendingCollective {
public:
  void wait() override {}
};

/// A single rank: every collective is the identity.
class LocalCollectives final : public Collectives {
public:
  explicit LocalCollectives(WorldConfig world)
      : Collectives(std::move(world)) {}
  std::unique_ptr<PendingCollective>
  startAllGather(const at::Tensor &) override {
    return std::make_unique<Completed>();
  }
  std::unique_ptr<PendingCollective>
  startReduceScatterSum(const at::Tensor &full, at::Tensor &mine) override {
    mine = full;
    return std::make_unique<Completed>();
  }
  void allReduceSum(at::Tensor &) override {}
  void allReduceMax(at::Tensor &) override {}
  void barrier() override {}
  void send(const at::Tensor &, int peer, int) override {
    throw std::runtime_error("send to rank " + std::to_string(peer) +
                             " of the one-rank group " + name());
  }
  void recv(at::Tensor &, int peer, int) override {
    throw std::runtime_error("receive from rank " + std::to_string(peer) +
                             " of the one-rank group " + name());
  }
  void flushSends() override {}
  std::unique_ptr<Collectives> subgroup(const std::vector<int> &ranks,
                                        const std::string &name) override {
    if (ranks.size() != 1 || ranks[0] != 0)
      throw CollectiveError("subgroup " + name + " [" + rankList(ranks) +
                            "] of a one-rank group");
    WorldConfig one = world;
    one.rank = 0;
    one.size = 1;
    return std::make_unique<LocalCollectives>(one, name, this);
  }

  LocalCollectives(WorldConfig world, std::string name, Collectives *parent)
      : Collectives(std::move(world), std::move(name), parent) {}
};

/// Makes the c10d group of one (sub)group over `store`.
template <typename Group>
c10::intrusive_ptr<Group> makeGroup(const c10::intrusive_ptr<c10d::Store> &store,
                                    int rank, int size,
                                    const WorldConfig &world);

template <>
c10::intrusive_ptr<c10d::ProcessGroupGloo>
makeGroup<c10d::ProcessGroupGloo>(const c10::intrusive_ptr<c10d::Store> &store,
                                  int rank, int size, const WorldConfig &world) {
  auto glooOptions = c10d::ProcessGroupGloo::Options::create(world.timeout);
  glooOptions->devices.push_back(
      world.masterAddr == "127.0.0.1" || world.masterAddr == "localhost"
          ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
          : c10d::ProcessGroupGloo::createDefaultDevice());
  glooOptions->threads = 1;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size,
                                                     glooOptions);
}

#ifdef PARC_HAVE_NCCL
template <>
c10::intrusive_ptr<c10d::ProcessGroupNCCL>
makeGroup<c10d::ProcessGroupNCCL>(const c10::intrusive_ptr<c10d::Store> &store,
                                  int rank, int size, const WorldConfig &world) {
  auto ncclOptions = c10d::ProcessGroupNCCL::Options::create();
  ncclOptions->timeout = world.timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size,
                                                     ncclOptions);
}
#endif

/// Collectives over a c10d process group: `Group` is a ProcessGroup in
/// 1.13 and a Backend in 2.x, with the same collective signatures.
template <typename Group>
class ProcessGroupCollectives final : public Collectives {
public:
  ProcessGroupCollectives(WorldConfig world,
                          c10::intrusive_ptr<c10d::Store> store,
                          c10::intrusive_ptr<Group> group,
                          bool nativeCollectives,
                          std::string name = "world",
                          Collectives *parent = nullptr, int worldRank = -1)
      : Collectives(std::move(world), std::move(name), parent),
        store(std::move(store)), group(std::move(group)),
        nativeCollectives(nativeCollectives),
        worldRank(worldRank < 0 ? this->world.rank : worldRank) {}
  ~ProcessGroupCollectives() override {
    // A send nobody waited for (an error unwinding the step) must not
    // outlive its buffer.
    pendingSends.clear();
  }

  /// The works of one started collective, waited in order.
  class Pending final : public PendingCollective {
  public:
    Pending(ProcessGroupCollectives &owner, const char *what)
        : owner(owner), what(what) {}
    void wait() override {
      for (auto &work : works)
        owner.finish(work, what);
      works.clear();
    }
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    /// The tensors the works write, alive until they have.
    std::vector<at::Tensor> tensors;

  private:
    ProcessGroupCollectives &owner;
    const char *what;
  };

  std::unique_ptr<PendingCollective>
  startAllGather(const at::Tensor &full) override {
    entering();
    auto pending = std::make_unique<Pending>(*this, "all-gather");
    std::vector<at::Tensor> slices = bitwise(full).chunk(size(), 0);
    try {
      if (nativeCollectives) {
        at::Tensor output = bitwise(full), input = slices[rank()];
        pending->works.push_back(group->_allgather_base(output, input));
      } else {
        for (int root = 0; root < size(); ++root) {
          std::vector<at::Tensor> one{slices[root]};
          c10d::BroadcastOptions options;
          options.rootRank = root;
          pending->works.push_back(group->broadcast(one, options));
        }
      }
    } catch (const std::exception &e) {
      throw CollectiveError(describe("all-gather") +
                            " failed to start: " + e.what());
    }
    pending->tensors = std::move(slices);
    return pending;
  }

  std::unique_ptr<PendingCollective>
  startReduceScatterSum(const at::Tensor &full, at::Tensor &mine) override {
    entering();
    auto pending = std::make_unique<Pending>(*this, "reduce-scatter");
    at::Tensor input = full.contiguous();
    std::vector<at::Tensor> slices = input.chunk(size(), 0);
    try {
      if (nativeCollectives) {
        mine = at::empty_like(slices[rank()]);
        std::vector<at::Tensor> outputs{mine};
        std::vector<std::vector<at::Tensor>> inputs{slices};
        pending->works.push_back(group->reduce_scatter(outputs, inputs));
      } else {
        // Gloo: an all-to-all of the slices and a sum in rank order,
        // completed here. CPU ranks share the host's cores, so overlapping
        // this with the compute after it only contends for them (measured
        // 1.3-1.6x slower per step, benchmarks/parc-run); what the program
        // plans still holds: the input stays alive until the wait.
        at::Tensor received = at::empty_like(input);
        std::vector<int64_t> equalSplits;
        at::Tensor into = bitwise(received), from = bitwise(input);
        finish(group->alltoall_base(into, from, equalSplits, equalSplits),
               "reduce-scatter (all-to-all)");
        std::vector<int64_t> shape = input.sizes().vec();
        shape[0] /= size();
        shape.insert(shape.begin(), size());
        mine = received.view(shape).sum(0);
      }
    } catch (const CollectiveError &) {
      throw; // finish() named the collective and the peer
    } catch (const std::exception &e) {
      throw CollectiveError(describe("reduce-scatter") +
                            " failed to start: " + e.what());
    }
    pending->tensors = {input};
    return pending;
  }

  void allReduceSum(at::Tensor &tensor) override {
    entering();
    // Gloo has no bf16 arithmetic: reduce in fp32 and round once.
    bool widen = isGloo() && tensor.scalar_type() == at::kBFloat16;
    std::vector<at::Tensor> tensors{widen ? tensor.to(at::kFloat) : tensor};
    finish(group->allreduce(tensors), "all-reduce");
    if (widen)
      tensor.copy_(tensors[0]);
  }

  void allReduceMax(at::Tensor &tensor) override {
    entering();
    std::vector<at::Tensor> tensors{tensor};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    finish(group->allreduce(tensors, options), "all-reduce (max)");
  }

  void barrier() override {
    entering();
    finish(group->barrier(), "barrier");
  }

  void send(const at::Tensor &tensor, int peer, int tag) override {
    entering();
    std::vector<at::Tensor> tensors{bitwise(tensor.contiguous())};
    try {
      pendingSends.push_back({group->send(tensors, peer, tag), tensors[0]});
    } catch (const std::exception &e) {
      throw CollectiveError(describe("send to group rank " +
                                     std::to_string(peer)) +
                            " failed: " + e.what());
    }
  }

  void recv(at::Tensor &tensor, int peer, int tag) override {
    entering();
    std::vector<at::Tensor> tensors{bitwise(tensor)};
    finish(group->recv(tensors, peer, tag),
           ("receive from group rank " + std::to_string(peer)).c_str());
  }

  void flushSends() override {
    for (auto &pending : pendingSends)
      finish(pending.first, "send");
    pendingSends.clear();
  }

  std::unique_ptr<Collectives> subgroup(const std::vector<int> &ranks,
                                        const std::string &name) override {
    auto mine = std::find(ranks.begin(), ranks.end(), rank());
    if (mine == ranks.end())
      throw CollectiveError("rank " + std::to_string(worldRank) +
                            " is not in subgroup " + name + " [" +
                            rankList(ranks) + "]");
    WorldConfig sub = world;
    sub.rank = mine - ranks.begin();
    sub.size = ranks.size();
    std::string full = name + "[" + rankList(ranks) + "]";
    if (sub.size == 1) {
      return std::make_unique<LocalCollectives>(sub, full, this);
    }
    try {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>(full, store);
      auto made = makeGroup<Group>(prefixed, sub.rank, sub.size, world);
      return std::make_unique<ProcessGroupCollectives<Group>>(
          sub, prefixed, made, nativeCollectives, full, this, worldRank);
    } catch (const std::exception &e) {
      throw CollectiveError("rank " + std::to_string(worldRank) +
                            ": cannot form process group " + full + ": " +
                            e.what());
    }
  }

private:
  bool isGloo() const { return world.backend == "gloo"; }

  /// Gloo (LibTorch 1.13) moves no bf16 tensors; a collective that only
  /// copies bytes (gather, all-to-all, send, receive) moves them as the
  /// 16-bit type it does know, the same bits.
  at::Tensor bitwise(const at::Tensor &tensor) const {
    return isGloo() && tensor.scalar_type() == at::kBFloat16
               ? tensor.view(at::kHalf)
               : tensor;
  }

  std::string describe(const std::string &what) const {
    std::string where = what + " #" + std::to_string(currentSequence()) +
                        " on rank " + std::to_string(worldRank);
    if (parent)
      where += " (group " + name() + ")";
    return where;
  }

  void finish(const c10::intrusive_ptr<c10d::Work> &work,
              const char *what) {
    try {
      work->wait(world.timeout);
    } catch (const std::exception &e) {
      throw CollectiveError(
          describe(what) + " failed (a peer rank died or stopped "
          "responding within " + std::to_string(world.timeout.count()) +
          " ms): " + e.what());
    }
    // The backend's worker thread still holds the work (and the buffers it
    // allocated, such as Gloo's flat all-gather output) for a moment after
    // wait() returns; let it let go first, so that those bytes are freed
    // before the next op allocates, on every run alike (measured peaks
    // otherwise vary from run to run). Bounded: never a hang.
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(200);
    while (work.use_count() > 1 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }

  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Group> group;
  /// The backend has flat reduce_scatter and _allgather_base (NCCL).
  bool nativeCollectives;
  int worldRank;
  /// Sends started and not yet waited for, with the tensors they read.
  std::vector<std::pair<c10::intrusive_ptr<c10d::Work>, at::Tensor>>
      pendingSends;
};

} // namespace

std::unique_ptr<Collectives>
parc::runtime::connectWorld(const WorldConfig &world, std::string &error) {
  if (world.size == 1)
    return std::make_unique<LocalCollectives>(world);
  std::string where = "rank " + std::to_string(world.rank) + " of " +
                      std::to_string(world.size) + " at " +
                      (world.storePath.empty()
                           ? world.masterAddr + ":" +
                                 std::to_string(world.masterPort)
                           : world.storePath);
  try {
    c10::intrusive_ptr<c10d::Store> store;
    if (!world.storePath.empty()) {
      store = c10::make_intrusive<c10d::FileStore>(world.storePath, world.size);
      store->setTimeout(world.timeout);
    } else {
      c10d::TCPStoreOptions options;
      options.port = static_cast<uint16_t>(world.masterPort);
      options.isServer = world.rank == 0;
      options.numWorkers = world.size;
      options.timeout = world.timeout;
      store = c10::make_intrusive<c10d::TCPStore>(world.masterAddr, options);
    }
    if (world.backend == "nccl") {
#ifdef PARC_HAVE_NCCL
      auto group = makeGroup<c10d::ProcessGroupNCCL>(store, world.rank,
                                                     world.size, world);
      return std::make_unique<ProcessGroupCollectives<c10d::ProcessGroupNCCL>>(
          world, store, group, /*nativeCollectives=*/true);
#else
      error = where + ": this parc-run was built without NCCL (LibTorch "
                      "without CUDA); use --backend gloo";
      return nullptr;
#endif
    }
    auto group = makeGroup<c10d::ProcessGroupGloo>(store, world.rank,
                                                   world.size, world);
    return std::make_unique<ProcessGroupCollectives<c10d::ProcessGroupGloo>>(
        world, store, group, /*nativeCollectives=*/false);
  } catch (const std::exception &e) {
    error = where + ": cannot form the process group: " + e.what();
    return nullptr;
  }
}
