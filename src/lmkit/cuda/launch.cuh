// How lmkit's .cu files spell a kernel launch and a block's shared memory:
//   LMKIT_LAUNCH(grid, block, shared_bytes, stream, Kernel<T>)(args...);  // Kernel<T><<<grid, block, shared_bytes,
//                                                                          //           stream>>>(args...)
//   LMKIT_DYNAMIC_SHARED(unsigned int, counters);                   // extern __shared__ unsigned int counters[];
//   LMKIT_SHARED(float, scale);                                     // __shared__ float scale;
//   LMKIT_SHARED_ARRAY(float, partial, 8);                          // __shared__ float partial[8];
// With nvcc they are exactly the CUDA syntax on the right. They exist so the CPU emulator of the tests
// (tests/emu/include/cuda_runtime.h), which defines them before this header is read, can run the same kernels and
// launchers with the host compiler, and fill every block's shared memory with poison before the block runs; a kernel
// launched or given shared memory any other way would escape it.
#pragma once

#ifndef LMKIT_LAUNCH
#define LMKIT_LAUNCH(grid, block, shared, stream, ...) __VA_ARGS__<<<grid, block, shared, stream>>>
#endif
#ifndef LMKIT_DYNAMIC_SHARED
#define LMKIT_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
#ifndef LMKIT_SHARED
#define LMKIT_SHARED(type, name) __shared__ type name
#endif
#ifndef LMKIT_SHARED_ARRAY
#define LMKIT_SHARED_ARRAY(type, name, count) __shared__ type name[count]
#endif
