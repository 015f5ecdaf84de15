//===- Collectives.cpp - c10d process groups behind one seam --------------===//
//
// Gloo (LibTorch 1.13 and later) and, when the LibTorch found is a CUDA
// build, NCCL. Gloo in 1.13 refuses reduce_scatter and _allgather_base, so
// reduce-scatter is an alltoall_base plus a local sum (the bytes a ring
// reduce-scatter moves: each rank sends (n-1)/n of its buffer) and all-gather
// is the list form over views of the output.
//
//===----------------------------------------------------------------------===//

#include "parc/runtime/Collectives.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef PARC_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <stdexcept>

using namespace parc::runtime;

namespace {

/// A single rank: every collective is the identity.
class LocalCollectives final : public Collectives {
public:
  explicit LocalCollectives(WorldConfig world)
      : Collectives(std::move(world)) {}
  void allGather(const at::Tensor &shard, at::Tensor &full) override {
    full.copy_(shard);
  }
  at::Tensor reduceScatterSum(const at::Tensor &full) override {
    return full;
  }
  void allReduceSum(at::Tensor &) override {}
  void barrier() override {}
};

/// Collectives over a c10d process group: `Group` is a ProcessGroup in
/// 1.13 and a Backend in 2.x, with the same collective signatures.
template <typename Group>
class ProcessGroupCollectives final : public Collectives {
public:
  ProcessGroupCollectives(WorldConfig world,
                          c10::intrusive_ptr<c10d::Store> store,
                          c10::intrusive_ptr<Group> group,
                          bool nativeReduceScatter)
      : Collectives(std::move(world)), store(std::move(store)),
        group(std::move(group)), nativeReduceScatter(nativeReduceScatter) {}

  void allGather(const at::Tensor &shard, at::Tensor &full) override {
    entering();
    std::vector<at::Tensor> inputs{shard.contiguous()};
    std::vector<std::vector<at::Tensor>> outputs{full.chunk(size(), 0)};
    finish(group->allgather(outputs, inputs), "all-gather");
  }

  at::Tensor reduceScatterSum(const at::Tensor &full) override {
    entering();
    at::Tensor input = full.contiguous();
    if (nativeReduceScatter) {
      at::Tensor output = at::empty_like(input.chunk(size(), 0)[0]);
      std::vector<at::Tensor> outputs{output};
      std::vector<std::vector<at::Tensor>> inputs{input.chunk(size(), 0)};
      finish(group->reduce_scatter(outputs, inputs), "reduce-scatter");
      return output;
    }
    // Chunk r of the input goes to rank r; this rank receives its chunk from
    // every rank and sums them in rank order, deterministically.
    at::Tensor received = at::empty_like(input);
    std::vector<int64_t> equalSplits;
    finish(group->alltoall_base(received, input, equalSplits, equalSplits),
           "reduce-scatter (all-to-all)");
    std::vector<int64_t> shape = input.sizes().vec();
    shape[0] /= size();
    shape.insert(shape.begin(), size());
    return received.view(shape).sum(0);
  }

  void allReduceSum(at::Tensor &tensor) override {
    entering();
    std::vector<at::Tensor> tensors{tensor};
    finish(group->allreduce(tensors), "all-reduce");
  }

  void barrier() override {
    entering();
    finish(group->barrier(), "barrier");
  }

private:
  void finish(const c10::intrusive_ptr<c10d::Work> &work,
              const char *what) {
    try {
      work->wait(world.timeout);
    } catch (const std::exception &e) {
      throw CollectiveError(
          std::string(what) + " #" + std::to_string(sequence) + " on rank " +
          std::to_string(rank()) + " failed (a peer rank died or stopped "
          "responding within " + std::to_string(world.timeout.count()) +
          " ms): " + e.what());
    }
  }

  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Group> group;
  bool nativeReduceScatter;
};

} // namespace

std::unique_ptr<Collectives>
parc::runtime::connectWorld(const WorldConfig &world, std::string &error) {
  if (world.size == 1)
    return std::make_unique<LocalCollectives>(world);
  std::string where = "rank " + std::to_string(world.rank) + " of " +
                      std::to_string(world.size) + " at " + world.masterAddr +
                      ":" + std::to_string(world.masterPort);
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(world.masterPort);
    options.isServer = world.rank == 0;
    options.numWorkers = world.size;
    options.timeout = world.timeout;
    auto store =
        c10::make_intrusive<c10d::TCPStore>(world.masterAddr, options);
    if (world.backend == "nccl") {
#ifdef PARC_HAVE_NCCL
      auto ncclOptions = c10d::ProcessGroupNCCL::Options::create();
      ncclOptions->timeout = world.timeout;
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          store, world.rank, world.size, ncclOptions);
      return std::make_unique<ProcessGroupCollectives<c10d::ProcessGroupNCCL>>(
          world, store, group, /*nativeReduceScatter=*/true);
#else
      error = where + ": this parc-run was built without NCCL (LibTorch "
                      "without CUDA); use --backend gloo";
      return nullptr;
#endif
    }
    auto glooOptions = c10d::ProcessGroupGloo::Options::create(world.timeout);
    glooOptions->devices.push_back(
        world.masterAddr == "127.0.0.1" || world.masterAddr == "localhost"
            ? c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1")
            : c10d::ProcessGroupGloo::createDefaultDevice());
    glooOptions->threads = 1;
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        store, world.rank, world.size, glooOptions);
    return std::make_unique<ProcessGroupCollectives<c10d::ProcessGroupGloo>>(
        world, store, group, /*nativeReduceScatter=*/false);
  } catch (const std::exception &e) {
    error = where + ": cannot form the process group: " + e.what();
    return nullptr;
  }
}
