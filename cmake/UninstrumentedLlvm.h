//===- UninstrumentedLlvm.h - LLVM headers over an uninstrumented LLVM ----===//
//
// Force-included (-include) into every file of a sanitizer build. LLVM's
// headers poison a BumpPtrAllocator slab when ASan instruments the file that
// instantiates its slow path, and unpoison each allocation in the inline
// fast path. Debian's MLIR and LLVM are not instrumented: where a parc file's
// slow path (an attribute storage, say) and MLIR's fast path share one
// allocator, MLIR hands out memory that is still poisoned and ASan reports a
// use-after-poison in MLIR's own code. With these two calls disabled, parc's
// copies of the inline allocator code do what MLIR's do; ASan's own heap
// checks are unaffected.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_CMAKE_UNINSTRUMENTEDLLVM_H
#define PARC_CMAKE_UNINSTRUMENTEDLLVM_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PARC_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define PARC_ASAN 1
#endif

#ifdef PARC_ASAN
#include <sanitizer/asan_interface.h>
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif

#endif // PARC_CMAKE_UNINSTRUMENTEDLLVM_H
