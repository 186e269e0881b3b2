// LMKIT_HD marks a function of the formats unit as callable from host and device code: .cu files include these
// headers, and the CPU references and the CUDA kernels call the same definitions.
#pragma once

#if defined(__CUDACC__)
#define LMKIT_HD __host__ __device__ __forceinline__
#else
#define LMKIT_HD inline
#endif
